"""Files moved to and from the machine the tools act on (upload_file, download_file)."""
