"""The cores the tools call: one value built by the server, given to every tool function as its first argument."""

from __future__ import annotations

from dataclasses import dataclass

from symphony_mcp.code.coder import CoderService
from symphony_mcp.code.types import CodeExecutor
from symphony_mcp.config import Settings
from symphony_mcp.desktop.actions import DesktopActions
from symphony_mcp.desktop.screen import Screen
from symphony_mcp.elements.acting import ElementActions
from symphony_mcp.elements.reader import ElementReader
from symphony_mcp.files.transfer import FileTransfer
from symphony_mcp.memory.manager import TaskManager
from symphony_mcp.models.registry import ModelRegistry
from symphony_mcp.search.searcher import TutorialSearcher
from symphony_mcp.vision.grounding.grounder import VisionGrounder
from symphony_mcp.vision.grounding.targets import TargetResolver
from symphony_mcp.vision.ocr.grounder import OcrGrounder


@dataclass(frozen=True)
class Cores:
    settings: Settings
    screen: Screen  # captures, screenshots and the caller's coordinate space
    actions: DesktopActions  # pointer, keys, waits, windows and apps, each recorded
    elements: ElementReader  # the accessibility tree, numbered per frame
    element_actions: ElementActions  # acting on an element by id
    targets: TargetResolver  # described targets of pointer actions, located by the grounding model
    text: OcrGrounder  # text on screen, read and found by OCR
    grounder: VisionGrounder
    models: ModelRegistry
    tasks: TaskManager
    executor: CodeExecutor  # runs run_code's blocks where the desktop is
    coder: CoderService
    files: FileTransfer  # files to and from the machine the tools act on
    searcher: TutorialSearcher
