"""A test-made copy of OSWorld's file cache for the task JSONs of tests/data/osworld_files (two each of LibreOffice
Calc, Writer, Impress and Thunderbird): stand-in files (tier C of RESEARCH-NEXT §7, not OSWorld's own), generated at
test time from each task's instruction and metric, under the names its JSON gives, laid out as OSWorld's harness
leaves its cache (`<task_id>/<uuid5(url)>_<basename>` for a download, `<task_id>/<dest>` for a gold file) with the
manifest `bench osworld fetch-cache` writes (bench/osworld/offline.py reads both).

A gold file is what the task's solved state looks like: written from the instruction where it says what the result
holds (the CSV of the sheet), or the app's own export of the generated input where the task is that export (the PDF
of the document, the PNG of the first slide: LibreOffice headless on the host, a scratch profile)."""

from __future__ import annotations

import io
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openpyxl
from docx import Document
from pptx import Presentation
from pptx.util import Inches

from symphony_mcp.bench.osworld.offline import MANIFEST_FILE, Manifest, ManifestEntry, sha256_of, task_files
from symphony_mcp.bench.osworld.tasks import load_tasks
from testkit.paths import TEST_DATA

FILES_TASKS = TEST_DATA / "osworld_files"
CALC_CSV = "3aaa4e37-dc91-482e-99af-132a612d40f3"  # export the sheet as CSV (compare_csv against a gold CSV)
CALC_PROFIT = "1e8df695-bd1b-45b3-b557-e7d599cf7597"  # a Profit column = Sales - COGS (compare_table, gold xlsx)
WRITER_PDF = "4bcb1253-a636-4df4-8cb0-a35c04dfef31"  # export the document as PDF (compare_pdfs, gold PDF)
WRITER_CENTER = "3ef2b351-8a84-4ff2-8724-d86eae9b842e"  # center the heading (is_first_line_centered)
IMPRESS_PNG = "455d3c66-7dc6-4537-a39a-36d3e9119df7"  # export the slide as ~/Desktop/res.png (compare_images, gold PNG)
IMPRESS_PORTRAIT = "ce88f674-ab7a-43da-9201-468d38539e4a"  # slides upright (check_slide_orientation_Portrait)
THUNDERBIRD_SIGNATURE = "6766f2b8-8a72-417f-a9e5-56fcaa735837"  # a signature "Anonym ... XYZ Lab" (prefs.js)
THUNDERBIRD_DARK = "94760984-3ff5-41ee-8347-cf1af709fea0"  # a dark theme (prefs.js extensions.activeThemeID)

THUNDERBIRD_PROFILE = "t5q2a5hp.default-release"  # the folder OSWorld's getters read prefs.js from
# The install hash Thunderbird derives from its folder, /usr/lib/thunderbird (Debian's and Ubuntu's; read from the
# installs.ini it writes): the profile locked to it is the one it opens, not a new one of its own.
THUNDERBIRD_INSTALL = "FDC34C9F024745EB"
WEEKS = [(f"Week {n}", 1000 + 137 * n, 400 + 61 * n) for n in range(1, 9)]  # week, sales, COGS
ITEMS = [("Item", "Quantity", "Price"), ("Apple", 3, 2.5), ("Pear", 12, 0.75), ("Plum", 7, 4)]
PARAGRAPHS = [
    "Person and organizational summary",
    "This summary lists the people of the organization and the units they belong to.",
    "Each unit reports to the board once a quarter.",
]
OFFICE_TIMEOUT = 180.0

Files = dict[str, Callable[[Path, Path], None]]  # file name (a download's basename, a gold dest) -> maker(path, made)


def stand_in_cache(folder: Path, tasks_dir: Path = FILES_TASKS) -> Path:
    """The cache for every task of `tasks_dir` that FILES knows, with its manifest; `folder` is returned."""
    entries = []
    with tempfile.TemporaryDirectory() as scratch:
        for task in load_tasks(tasks_dir):
            if task["id"] in FILES:
                entries += _task_files(task, folder, Path(scratch) / task["id"])
    (folder / MANIFEST_FILE).write_text(Manifest(files=entries).model_dump_json(indent=1), encoding="utf-8")
    (folder / ".gitignore").write_text("*\n", encoding="utf-8")
    return folder


def _task_files(task: dict[str, Any], folder: Path, made: Path) -> list[ManifestEntry]:
    """The task's files into the cache: each made by its name in `made` first (a gold file may be made from an
    input), then stored under OSWorld's name for it."""
    made.mkdir(parents=True)
    makers = FILES[task["id"]]
    files = list(task_files(task))
    assert {f.name for f in files} == set(makers), (task["id"], [f.name for f in files])  # in step with its JSON
    for name, maker in makers.items():  # in order: inputs before the gold files made from them
        maker(made / name, made)
    entries = []
    for file in files:
        stored = folder / task["id"] / file.stored
        stored.parent.mkdir(parents=True, exist_ok=True)
        stored.write_bytes((made / file.name).read_bytes())
        size, digest = stored.stat().st_size, sha256_of(stored)
        entries.append(ManifestEntry(**file.__dict__, stored=file.stored, size=size, sha256=digest))
    return entries


def _workbook(rows: list[tuple[object, ...]]) -> Callable[[Path, Path], None]:
    def make(path: Path, made: Path) -> None:
        book = openpyxl.Workbook()
        sheet = book.active
        assert sheet is not None
        sheet.title = "Sheet1"
        for row in rows:
            sheet.append(row)
        book.save(path)

    return make


def _csv(rows: list[tuple[object, ...]]) -> Callable[[Path, Path], None]:
    """The sheet as Calc's default CSV export writes it (comma, numbers as shown, a newline after each row)."""

    def make(path: Path, made: Path) -> None:
        path.write_text("".join(",".join(str(value) for value in row) + "\n" for row in rows), encoding="utf-8")

    return make


def _document(path: Path, made: Path) -> None:
    document = Document()
    document.add_heading(PARAGRAPHS[0], level=1)
    for text in PARAGRAPHS[1:]:
        document.add_paragraph(text)
    document.save(str(path))


def _slides(width: float, height: float) -> Callable[[Path, Path], None]:
    def make(path: Path, made: Path) -> None:
        deck = Presentation()
        deck.slide_width, deck.slide_height = Inches(width), Inches(height)
        slide = deck.slides.add_slide(deck.slide_layouts[5])  # title only; the text without bullets, whose glyph
        slide.shapes.title.text = "Project plan on a page"  # came from another fallback font inside the environment
        text = slide.shapes.add_textbox(Inches(1), Inches(2), Inches(8), Inches(3)).text_frame
        text.text = "Scope, milestones and risks"
        deck.save(str(path))

    return make


def _exported(source: str, kind: str) -> Callable[[Path, Path], None]:
    """LibreOffice's own export of the generated input `source` (already made) to `kind`, as the task asks."""

    def make(path: Path, made: Path) -> None:
        out = made / f".{kind}"
        profile = made.parent / "office-profile"  # one for every export of a cache
        subprocess.run(
            ["soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless", "--norestore",
             "--convert-to", kind, "--outdir", str(out), str(made / source)],
            check=True, capture_output=True, timeout=OFFICE_TIMEOUT,
        )  # fmt: skip
        (out / f"{Path(source).stem}.{kind}").rename(path)

    return make


def _thunderbird_profile(path: Path, made: Path) -> None:
    """A profile as OSWorld's tarball holds it (`.thunderbird/` unpacked into the home): one IMAP account that never
    goes online (its identity id1, the one the tasks' prefs name) and Local Folders."""
    prefs = {
        "mail.account.account1.identities": "id1",
        "mail.account.account1.server": "server1",
        "mail.account.account2.server": "server2",
        "mail.accountmanager.accounts": "account1,account2",
        "mail.accountmanager.defaultaccount": "account1",
        "mail.accountmanager.localfoldersserver": "server2",
        "mail.identity.id1.fullName": "Anonym",
        "mail.identity.id1.useremail": "anonym-x2024@outlook.com",
        "mail.identity.id1.valid": True,
        "mail.server.server1.hostname": "outlook.office365.com",
        "mail.server.server1.name": "anonym-x2024@outlook.com",
        "mail.server.server1.type": "imap",
        "mail.server.server1.userName": "anonym-x2024@outlook.com",
        "mail.server.server1.login_at_startup": False,
        "mail.server.server1.check_new_mail": False,
        "mail.server.server2.directory-rel": "[ProfD]Mail/Local Folders",
        "mail.server.server2.hostname": "Local Folders",
        "mail.server.server2.name": "Local Folders",
        "mail.server.server2.type": "none",
        "mail.server.server2.userName": "nobody",
        "mail.shell.checkDefaultClient": False,
        "mail.provider.suppress_dialog_on_startup": True,
        "mailnews.start_page.enabled": False,
    }
    lines = ["// Mozilla User Preferences", ""]
    lines += [f"user_pref({_js(key)}, {_js(value)});" for key, value in sorted(prefs.items())]
    install = f"[{THUNDERBIRD_INSTALL}]\nDefault={THUNDERBIRD_PROFILE}\nLocked=1\n"
    profiles = (
        f"[Profile0]\nName=default-release\nIsRelative=1\nPath={THUNDERBIRD_PROFILE}\nDefault=1\n\n"
        f"[General]\nStartWithLastProfile=1\nVersion=2\n\n[Install{install[1:]}"
    )
    members = {
        ".thunderbird/installs.ini": install,
        ".thunderbird/profiles.ini": profiles,
        f".thunderbird/{THUNDERBIRD_PROFILE}/prefs.js": "\n".join(lines) + "\n",
        f".thunderbird/{THUNDERBIRD_PROFILE}/Mail/Local Folders/Inbox": "",
    }
    with tarfile.open(path, "w:gz") as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 1_700_000_000
            archive.addfile(info, io.BytesIO(data))


def _js(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


FILES: dict[str, Files] = {
    CALC_CSV: {"Export_Calc_to_CSV.xlsx": _workbook(ITEMS), "Export_Calc_to_CSV_gold.csv": _csv(ITEMS)},
    CALC_PROFIT: {
        "WeeklySales.xlsx": _workbook([("Week", "Sales", "COGS"), *WEEKS]),
        "6_WeeklySales_gt1.xlsx": _workbook(
            [("Week", "Sales", "COGS", "Profit"), *((week, sales, cogs, sales - cogs) for week, sales, cogs in WEEKS)]
        ),
    },
    WRITER_PDF: {
        "View_Person_Organizational_Summary.docx": _document,
        "Constitution_Template_With_Guidelines_Gold.pdf": _exported("View_Person_Organizational_Summary.docx", "pdf"),
    },
    WRITER_CENTER: {"Constitution_Template_With_Guidelines.docx": _document},
    IMPRESS_PNG: {
        "wssf-project-plan-on-a-page.pptx": _slides(13.333, 7.5),
        "res_gold.png": _exported("wssf-project-plan-on-a-page.pptx", "png"),
    },
    IMPRESS_PORTRAIT: {"AM_Last_Page_Template.pptx": _slides(13.333, 7.5)},
    THUNDERBIRD_SIGNATURE: {"thunderbird-profile.tar.gz": _thunderbird_profile},
    THUNDERBIRD_DARK: {"thunderbird-profile.tar.gz": _thunderbird_profile},
}
