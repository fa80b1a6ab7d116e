"""What survives abuse: kills mid-task, fuzzed and huge input, many sessions at once."""
