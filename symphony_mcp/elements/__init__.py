"""The accessibility tree as numbered targets: read, filtered to what a person can act on or read, acted on."""
