"""What the tool costs in bytes and install time: the install's footprint, the tools/list a host pays for."""
