"""OCR grounding benchmark: ground-truth screens (see `screens`)."""
