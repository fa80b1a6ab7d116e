"""Browser facts shared by everything that drives Chromium."""
