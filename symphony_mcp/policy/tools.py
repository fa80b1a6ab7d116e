"""Which tools the server offers: by name, by group, or only the read-only ones.

A tool's groups are derived from what it already declares, so a tool added later joins them without
a setting changing: the module it is defined in (actions, windows, screen, ocr, grounding, memory, and
whatever module comes next; the registry of tool names, tool_names.py, lists each tool under it) and its
annotations (`read-only`, `destructive`, `open-world`). A missing annotation counts as the MCP specification
says it defaults: not read-only, destructive, open-world.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from symphony_mcp.config import PolicySettings, setting_label
from symphony_mcp.errors import SettingsError
from symphony_mcp.policy.tool_names import ANNOTATION_GROUPS, GROUP_NAMES, TOOL_NAMES, TOOLS_BY_MODULE

READ_ONLY, DESTRUCTIVE, OPEN_WORLD = ANNOTATION_GROUPS


def setting_name(field_name: str) -> str:
    """How a person sets a policy field: its TOML path, environment variable and flag."""
    return setting_label("policy", field_name)


# Tools that run a whole agent loop of model calls (code_agent: up to 50 turns; search_tutorial: bounded by its own
# search.search_timeout_seconds, at most 3600) get a longer default bound
# than single calls; policy.timeouts sets theirs like any other tool's.
LONG_TOOL_BOUNDS: dict[str, float] = {"code_agent": 1800.0, "search_tutorial": 3700.0}


@dataclass(frozen=True)
class ToolFacts:
    """What the policy needs to know about one registered tool."""

    name: str
    module: str
    read_only: bool | None = None
    destructive: bool | None = None
    open_world: bool | None = None

    @property
    def groups(self) -> frozenset[str]:
        groups = {self.module.rsplit(".", 1)[-1]}
        if self.read_only:
            groups.add(READ_ONLY)
        elif self.destructive is not False:
            groups.add(DESTRUCTIVE)
        if self.open_world is not False:
            groups.add(OPEN_WORLD)
        return frozenset(groups)


@dataclass
class ToolPolicy:
    """The offer decision for every registered tool, and why a tool is off."""

    settings: PolicySettings
    tools: dict[str, ToolFacts] = field(default_factory=dict)

    def register(self, facts: ToolFacts) -> None:
        self.tools[facts.name] = facts

    def refusal(self, name: str) -> str | None:
        """None when the tool is offered, else a message naming the setting that turns it off."""
        facts = self.tools.get(name)
        if facts is None:
            return None  # not ours to judge: the server answers for unknown tools
        reason = self._reason(facts)
        if reason is None:
            return None
        return f"the tool {name!r} is turned off on this server: {reason}. tools/list shows the tools on offer"

    def _reason(self, facts: ToolFacts) -> str | None:
        s = self.settings
        if s.read_only and not facts.read_only:
            return f"{setting_name('read_only')} offers only tools annotated read-only"
        if facts.name in s.disabled_tools:
            return f"it is listed in {setting_name('disabled_tools')}"
        if off := sorted(facts.groups & set(s.disabled_groups)):
            return f"its group {off[0]!r} is listed in {setting_name('disabled_groups')}"
        if s.enabled_tools is None and s.enabled_groups is None:
            return None
        if facts.name in (s.enabled_tools or ()) or facts.groups & set(s.enabled_groups or ()):
            return None
        return (
            f"only the tools in {setting_name('enabled_tools')} and the groups in "
            f"{setting_name('enabled_groups')} are on, and it is in neither"
        )

    def needs_confirmation(self, facts: ToolFacts) -> bool:
        s = self.settings
        return facts.name in s.confirm_tools or bool(facts.groups & set(s.confirm_groups))

    def time_bound(self, name: str) -> tuple[float, str]:
        """A tool's time bound in seconds, and the setting it comes from."""
        setting = f"policy.timeouts.{name} (SYMPHONY_POLICY__TIMEOUTS)"
        if name in self.settings.timeouts:
            return self.settings.timeouts[name], setting
        if name in LONG_TOOL_BOUNDS:
            return max(LONG_TOOL_BOUNDS[name], self.settings.timeout_seconds), setting
        return self.settings.timeout_seconds, setting_name("timeout_seconds")


def check_names(settings: PolicySettings) -> None:
    """Refuse settings that name a tool or group the server does not have: a typo would otherwise leave a tool on.

    The names are checked against the registry of tool names (tool_names.py), so the command line checks them
    before anything starts, and the server again as it builds."""
    for field_name, names in (
        ("enabled_tools", settings.enabled_tools or []),
        ("disabled_tools", settings.disabled_tools),
        ("enabled_groups", settings.enabled_groups or []),
        ("disabled_groups", settings.disabled_groups),
        ("confirm_tools", settings.confirm_tools),
        ("confirm_groups", settings.confirm_groups),
        ("timeouts", list(settings.timeouts)),
    ):
        known, kind = (GROUP_NAMES, "groups") if field_name.endswith("groups") else (TOOL_NAMES, "tools")
        check_known(setting_name(field_name), names, known, kind)


def check_known(setting: str, names: Iterable[str], known: Collection[str], kind: str) -> None:
    """A SettingsError for the first of `names` that is not `known`: which one, the closest known, and all of them."""
    unknown = [name for name in names if name not in known]
    if unknown:
        raise SettingsError(
            f"{setting} names {unknown[0][:100]!r}, which is not one of this server's {kind}"
            f"{closest(unknown[0], known)}. The {kind} are: {', '.join(sorted(known))}"
        )


def check_registered(tools: Mapping[str, ToolFacts]) -> None:
    """The tools a server registered are those of the registry of tool names, each under its module, or the
    server does not build: the settings were checked against that registry."""
    registered = {name: facts.module.rsplit(".", 1)[-1] for name, facts in tools.items()}
    listed = {name: module for module, names in TOOLS_BY_MODULE.items() for name in names}
    if registered != listed:
        wrong = sorted(name for name in registered.keys() | listed.keys() if registered.get(name) != listed.get(name))
        raise RuntimeError(
            f"the tools registered and symphony_mcp/policy/tool_names.py differ in {', '.join(wrong)}: a tool is "
            "listed there under the module that defines it"
        )


def closest(name: str, known: Iterable[str]) -> str:
    """A hint naming the known name closest to a mistyped one (" (did you mean 'click'?)"), or nothing."""
    match = difflib.get_close_matches(name[:100].strip().lower(), list(known), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""
