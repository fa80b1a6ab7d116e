"""Reading the screen: OCR engines and phrase matching, and the general (VLM) grounder."""
