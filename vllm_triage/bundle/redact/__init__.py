"""Redaction and the leak scan: finding secrets in text, the redacted copy of a bundle,
and the last look before anything is shared."""
