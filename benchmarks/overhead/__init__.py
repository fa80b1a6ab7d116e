"""What a part costs besides the model: tool round trips, loops per step, the policy, code runs, recording, and the
benchmark adapters' and runner's bookkeeping."""
