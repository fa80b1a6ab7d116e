"""What the server remembers of a task: trajectories on disk, loop detection, milestones, the memory agent."""
