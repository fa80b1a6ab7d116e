"""What the server remembers of a session: action records now; trajectories and reflection later."""
