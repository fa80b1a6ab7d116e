"""Which tools the server offers: by name, by group, or only the read-only ones.

A tool's groups are derived from what it already declares, so a tool added later joins them without
a setting changing: the module it is defined in (actions, windows, screen, ocr, grounding, memory, and
whatever module comes next) and its annotations (`read-only`, `destructive`, `open-world`). A missing
annotation counts as the MCP specification says it defaults: not read-only, destructive, open-world.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field

from symphony_mcp.config import PolicySettings
from symphony_mcp.errors import SettingsError

ANNOTATION_GROUPS = ("read-only", "destructive", "open-world")


def setting_name(field_name: str) -> str:
    """How a person sets a policy field: its TOML path, environment variable and flag."""
    return f"policy.{field_name} (SYMPHONY_POLICY__{field_name.upper()}, --{field_name.replace('_', '-')})"


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
            groups.add("read-only")
        elif self.destructive is not False:
            groups.add("destructive")
        if self.open_world is not False:
            groups.add("open-world")
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

    def check_names(self) -> None:
        """Refuse to start on a name that matches nothing: a typo would otherwise leave a tool on."""
        groups = sorted({g for facts in self.tools.values() for g in facts.groups})
        s = self.settings
        for field_name, names, known in (
            ("enabled_tools", s.enabled_tools or [], self.tools),
            ("disabled_tools", s.disabled_tools, self.tools),
            ("enabled_groups", s.enabled_groups or [], groups),
            ("disabled_groups", s.disabled_groups, groups),
            ("confirm_tools", s.confirm_tools, self.tools),
            ("confirm_groups", s.confirm_groups, groups),
            ("timeouts", list(s.timeouts), self.tools),
        ):
            unknown = [n for n in names if n not in known]
            if unknown:
                kind = "groups" if field_name.endswith("groups") else "tools"
                raise SettingsError(
                    f"{setting_name(field_name)} names {unknown[0][:100]!r}, which is not one of this server's "
                    f"{kind}{closest(unknown[0], known)}. The {kind} are: {', '.join(sorted(known))}"
                )


def closest(name: str, known: Iterable[str]) -> str:
    """A hint naming the known name closest to a mistyped one (" (did you mean 'click'?)"), or nothing."""
    match = difflib.get_close_matches(name[:100].strip().lower(), list(known), n=1, cutoff=0.6)
    return f" (did you mean {match[0]!r}?)" if match else ""
