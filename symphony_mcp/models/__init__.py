"""OpenAI-compatible model clients for every agent role: endpoints, retries, image limits, usage."""
