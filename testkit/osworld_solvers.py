"""A scripted solver policy for OSWorld tasks of the apps (Chrome, VLC, GIMP): what a capable agent does, through
the task's own symphony server: the planner hands the job to the Coder (call_code_agent), whose bash runs inside the
environment as the task user and changes the app's own settings files the way the app stores them (closing the app
first where it would write its settings back on exit); then the planner says done. The do-nothing agent says done
at once.

Each solution is one Coder block; the stand-in Coder answers the block, then its verdict, then its summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from testkit.model_server import ModelRequest
from testkit.osworld_files import (
    CALC_CSV,
    CALC_PROFIT,
    IMPRESS_PNG,
    IMPRESS_PORTRAIT,
    THUNDERBIRD_DARK,
    THUNDERBIRD_SIGNATURE,
    WRITER_CENTER,
    WRITER_PDF,
)
from testkit.osworld_runs import Planner
from testkit.scripted_planner import CODER, act, said

CHROME_SEARCH = "bb5e4c0d-f964-439c-97b6-bdb9747de3f4"  # make Bing the default search engine
CHROME_DO_NOT_TRACK = "030eeff7-b492-4218-b312-701ec99ee0cc"  # turn on Do Not Track
CHROME_HISTORY = "44ee5668-ecd5-4366-a6ce-c1c9b8d4e938"  # delete the YouTube history (update_browse_history setup)
VLC_MAX_VOLUME = "9195653c-f4aa-453d-aa95-787f6ccfaae9"  # let the volume go to 200%
VLC_RECORDINGS = "8ba5ae7a-5ae5-4eab-9fcc-5dd4fe3abf89"  # record into ~/Desktop
GIMP_UNDO = "7b7617bd-57cc-468e-9c91-40c4ec2bcb3d"  # keep at least 100 undo steps
GIMP_THEME = "7767eef2-56a3-4cea-8c9f-48c070c7d65b"  # the light theme

# Chrome writes its Preferences and History back when it exits: close it first, and wait until it is gone. (The
# bracket keeps the pattern from matching the shell running it.)
CLOSE_CHROME = "pkill -f 'google-chrom[e]'; while pgrep -f 'google-chrom[e]' >/dev/null; do sleep 0.2; done"
PREFERENCES = "$HOME/.config/google-chrome/Default/Preferences"


def _chrome_preference(python_edit: str) -> str:
    return f"""{CLOSE_CHROME}
python3 - "{PREFERENCES}" <<'PY'
import json, sys
path = sys.argv[1]
with open(path) as file:
    prefs = json.load(file)
{python_edit}
with open(path, "w") as file:
    json.dump(prefs, file)
PY
"""


def _gimp_setting(line: str) -> str:
    """GIMP writes gimprc when it quits: quit it first, then add the setting as GIMP writes it."""
    return (
        "pkill -x 'gimp.*'; while pgrep -x 'gimp.*' >/dev/null; do sleep 0.2; done\n"
        f"mkdir -p ~/.config/GIMP/2.10 && echo '{line}' >> ~/.config/GIMP/2.10/gimprc && cat ~/.config/GIMP/2.10/gimprc"
    )


def _vlc_setting(name: str, value: str) -> str:
    return f"sed -i 's|^#\\?{name}=.*|{name}={value}|' ~/.config/vlc/vlcrc && grep '^{name}=' ~/.config/vlc/vlcrc"


# LibreOffice keeps a document it has open to itself: quit it first (a document left unchanged asks nothing), and
# drop the lock file a quit leaves when it was slow to go.
CLOSE_OFFICE = "pkill -x soffice.bin; while pgrep -x soffice.bin >/dev/null; do sleep 0.2; done"


def _office_export(path: str, kind: str, target: str = "") -> str:
    """LibreOffice's own export of the document (File > Export, headless), next to it or renamed to `target`."""
    folder, stem = path.rsplit("/", 1)[0], path.rsplit("/", 1)[1].rsplit(".", 1)[0]
    move = f" && mv {folder}/{stem}.{kind} {target}" if target else ""
    return (
        f"{CLOSE_OFFICE}\nrm -f {folder}/.~lock.*#\n"
        f"soffice --headless --norestore --convert-to {kind} --outdir {folder} {path}{move} && ls -l {folder}"
    )


def _office_edit(path: str, filter_name: str, edit: str) -> str:
    """The document edited through LibreOffice's own scripting (Python UNO, Debian's python3-uno): a headless
    LibreOffice loads it, `edit` changes `doc`, and it is stored in its own format (the filter) over itself."""
    folder = path.rsplit("/", 1)[0]
    return f"""{CLOSE_OFFICE}
rm -f {folder}/.~lock.*#
/usr/bin/python3 - <<'PY'
import subprocess, time, uno
from com.sun.star.beans import PropertyValue
from com.sun.star.connection import NoConnectException

def prop(name, value):
    item = PropertyValue()
    item.Name, item.Value = name, value
    return item

office = subprocess.Popen(["soffice", "--headless", "--norestore", "--accept=pipe,name=solver;urp;"])
local = uno.getComponentContext()
resolver = local.ServiceManager.createInstanceWithContext("com.sun.star.bridge.UnoUrlResolver", local)
for _ in range(600):
    try:
        context = resolver.resolve("uno:pipe,name=solver;urp;StarOffice.ComponentContext")
        break
    except NoConnectException:
        time.sleep(0.1)
desktop = context.ServiceManager.createInstanceWithContext("com.sun.star.frame.Desktop", context)
url = uno.systemPathToFileUrl("{path}")
doc = desktop.loadComponentFromURL(url, "_blank", 0, (prop("Hidden", True),))
{edit}
doc.storeToURL(url, (prop("FilterName", "{filter_name}"), prop("Overwrite", True)))
doc.close(True)
try:
    desktop.terminate()
except Exception:  # the bridge goes with the office
    pass
office.wait(60)
print("stored", url)
PY
"""


PROFIT_COLUMN = """sheet = doc.Sheets.getByIndex(0)
end = sheet.createCursor()
end.gotoEndOfUsedArea(False)
rows, columns = end.RangeAddress.EndRow + 1, end.RangeAddress.EndColumn + 1
headers = [sheet.getCellByPosition(c, 0).String for c in range(columns)]
sales, cogs = (chr(ord("A") + headers.index(name)) for name in ("Sales", "COGS"))
sheet.getCellByPosition(columns, 0).String = "Profit"
for row in range(2, rows + 1):
    sheet.getCellByPosition(columns, row - 1).Formula = f"={sales}{row}-{cogs}{row}"
"""
CENTER_HEADING = """from com.sun.star.style.ParagraphAdjust import CENTER
doc.Text.createEnumeration().nextElement().ParaAdjust = CENTER
"""
PORTRAIT = """pages = doc.DrawPages
width, height = pages.getByIndex(0).Width, pages.getByIndex(0).Height
for index in range(pages.Count):
    page = pages.getByIndex(index)
    page.Width, page.Height = min(width, height), max(width, height)
"""


def _thunderbird_pref(name: str, value: str) -> str:
    """Thunderbird writes prefs.js when it quits: quit it, then set the preference (as Settings > Config Editor
    would) in the profile it uses (installs.ini's default)."""
    return (
        "pkill -x thunderbird; while pgrep -x thunderbird >/dev/null; do sleep 0.2; done\n"
        "profile=~/.thunderbird/$(sed -n 's/^Default=//p' ~/.thunderbird/installs.ini | head -n 1)\n"
        f"printf '%s\\n' 'user_pref(\"{name}\", {value});' >> \"$profile/prefs.js\"\n"
        f"grep -F '{name}' \"$profile/prefs.js\""
    )


SOLUTIONS: dict[str, tuple[str, str]] = {  # task id -> (the job the planner gives the Coder, the Coder's bash)
    CHROME_SEARCH: (
        "Set Chrome's default search engine to Bing in its profile",
        _chrome_preference(
            'prefs["default_search_provider_data"] = {"template_url_data": {"short_name": "Bing", '
            '"keyword": "bing.com", "url": "https://www.bing.com/search?q={searchTerms}"}}'
        ),
    ),
    CHROME_DO_NOT_TRACK: (
        "Turn on Do Not Track in Chrome's profile",
        _chrome_preference('prefs["enable_do_not_track"] = True'),
    ),
    CHROME_HISTORY: (
        "Delete every YouTube page from Chrome's browsing history",
        f"""{CLOSE_CHROME}
python3 - "$HOME/.config/google-chrome/Default/History" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
ids = [row[0] for row in db.execute("SELECT id FROM urls WHERE url LIKE '%youtube%'")]
db.executemany("DELETE FROM visits WHERE url = ?", [(i,) for i in ids])
db.executemany("DELETE FROM urls WHERE id = ?", [(i,) for i in ids])
db.commit()
print(len(ids), "pages deleted")
PY
""",
    ),
    VLC_MAX_VOLUME: (
        "Let VLC's volume go up to 200%",
        "pkill -x vlc; while pgrep -x vlc >/dev/null; do sleep 0.2; done\n" + _vlc_setting("qt-max-volume", "200"),
    ),
    VLC_RECORDINGS: (
        "Make VLC store its recordings in ~/Desktop",
        _vlc_setting("input-record-path", "/home/user/Desktop"),
    ),
    GIMP_UNDO: ("Set GIMP's minimum number of undo steps to 100", _gimp_setting("(undo-levels 100)")),
    GIMP_THEME: ("Switch GIMP to its Light theme", _gimp_setting('(theme "Light")')),
    CALC_CSV: (
        "Export the sheet of ~/Export_Calc_to_CSV.xlsx as ~/Export_Calc_to_CSV.csv",
        _office_export("/home/user/Export_Calc_to_CSV.xlsx", "csv"),
    ),
    CALC_PROFIT: (
        "Add a Profit column (Sales - COGS) to ~/WeeklySales.xlsx",
        _office_edit("/home/user/WeeklySales.xlsx", "Calc MS Excel 2007 XML", PROFIT_COLUMN),
    ),
    WRITER_PDF: (
        "Export ~/Desktop/View_Person_Organizational_Summary.docx as a PDF of the same name",
        _office_export("/home/user/Desktop/View_Person_Organizational_Summary.docx", "pdf"),
    ),
    WRITER_CENTER: (
        "Center the heading of ~/Desktop/Constitution_Template_With_Guidelines.docx",
        _office_edit(
            "/home/user/Desktop/Constitution_Template_With_Guidelines.docx", "MS Word 2007 XML", CENTER_HEADING
        ),
    ),
    IMPRESS_PNG: (
        "Export the presentation on the Desktop as ~/Desktop/res.png",
        _office_export("/home/user/Desktop/wssf-project-plan-on-a-page.pptx", "png", "/home/user/Desktop/res.png"),
    ),
    IMPRESS_PORTRAIT: (
        "Make the slides of ~/Desktop/AM_Last_Page_Template.pptx portrait",
        _office_edit("/home/user/Desktop/AM_Last_Page_Template.pptx", "Impress MS PowerPoint 2007 XML", PORTRAIT),
    ),
    THUNDERBIRD_SIGNATURE: (
        "Set Thunderbird's signature to Anonym, XYZ Lab",
        _thunderbird_pref("mail.identity.id1.htmlSigText", '"Anonym\\nXYZ Lab"'),
    ),
    THUNDERBIRD_DARK: (
        "Switch Thunderbird to its dark theme",
        _thunderbird_pref("extensions.activeThemeID", '"thunderbird-compact-dark@mozilla.org"'),
    ),
}


@dataclass
class Solver:
    """The planner and Coder of the solver policy (solve) or of the do-nothing agent (idle), per task id."""

    planner: Planner
    coder: dict[str, list[str]] = field(default_factory=dict)  # the Coder's job -> its remaining answers

    def solve(self, *task_ids: str) -> None:
        for task_id in task_ids:
            job, code = SOLUTIONS[task_id]
            self.planner.plans[task_id] = [
                act(f"call_code_agent(task={job!r})", "The Coder changes it."),
                act("done()"),
            ]
            self.coder[job] = [said(job, "bash", code), "The setting is changed.\nDONE", f"{job}: done."]

    def idle(self, *task_ids: str) -> None:
        for task_id in task_ids:
            self.planner.plans[task_id] = [act("done()")]

    def __call__(self, request: ModelRequest) -> str:
        if request.body["model"] != CODER:
            return self.planner(request)
        text = "\n".join(request.texts())
        job = next(job for job in self.coder if job in text)
        return self.coder[job].pop(0)
