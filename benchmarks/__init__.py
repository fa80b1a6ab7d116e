"""Benchmarks of symphony-mcp, run as modules from the repository root (`python -m benchmarks.<room>.<name>`), each
writing its report to benchmarks/results/<name>.md with the command that produced it. Rooms by what they measure:
overhead/ (what a part costs besides the model), accuracy/, robustness/, size/; ocr_grounding/ measures OCR and
grounding accuracy on strangers' screens. What they share is in common.py; support shared with the tests in testkit/.
"""
