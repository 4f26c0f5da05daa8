"""Shared helpers for the facade tests: a small corpus on disk and recording fake models."""

from __future__ import annotations

from pathlib import Path

CORPUS = {
    "filters.md": (
        "# Maintenance guide\n\n"
        "The air filter should be replaced every 12 months or every 15,000 km, whichever comes first.\n"
        "Dusty roads shorten the interval to 6 months. Check the filter housing for cracks during each service.\n\n"
        "## Brakes\n\n"
        "Brake pads wear faster in city driving. Inspect the pads every 10,000 km and replace them below 3 mm.\n"
    ),
    "warranty.txt": (
        "The warranty covers manufacturing defects for three years from the date of purchase.\n"
        "Damage caused by missing maintenance is not covered. Keep the service receipts as proof of maintenance.\n"
        "Batteries are covered for two years only.\n"
    ),
    "coolant.md": (
        "Coolant must be changed every 5 years. Use only the blue long-life coolant.\n"
        "Never open the radiator cap while the engine is hot.\n"
    ),
    "tyres.txt": (
        "Tyre pressure should be checked monthly. The recommended pressure is 2.4 bar front and 2.6 bar rear.\n"
        "Rotate the tyres every 8,000 km to even out wear.\n"
    ),
}


def write_corpus(folder: Path, files: dict[str, str] | None = None) -> Path:
    """Write the corpus files under ``folder`` and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in (files or CORPUS).items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


class RecordingModel:
    """A callable model ``prompt -> str`` that records every prompt it is given."""

    def __init__(self, reply: str = "It depends on the documents.") -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.reply(prompt) if callable(self.reply) else self.reply
