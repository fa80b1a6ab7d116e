"""Image handling for models and hosts: encoding now; OCR and grounding later."""
