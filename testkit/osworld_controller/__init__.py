"""OSWorld's in-VM controller, stood in for by a real server on an X display (app.py), run as its own process."""
