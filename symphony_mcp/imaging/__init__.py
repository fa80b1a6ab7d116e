"""Ground-floor imaging helpers: pixel geometry and image encoding, used by every layer above."""
