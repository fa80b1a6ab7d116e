"""How often an answer is right: the offline docs index's ranking (OCR and grounding: benchmarks/ocr_grounding/)."""
