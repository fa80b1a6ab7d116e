"""Running code blocks for the Coder: the executor interface, its confined local backend and their results."""
