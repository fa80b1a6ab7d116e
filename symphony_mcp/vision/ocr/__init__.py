"""Optical character recognition: engines behind one interface, incremental per-frame caching,
and phrase matching for text-grounded actions."""
