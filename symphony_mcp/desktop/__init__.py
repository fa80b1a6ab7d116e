"""The hands and eyes: screen capture, pointer and keyboard, windows, the virtual display, frames and action records."""
