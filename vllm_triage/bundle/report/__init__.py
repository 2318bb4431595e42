"""What the report command needs from the bundle layer: the report's own redaction and leak scan."""
