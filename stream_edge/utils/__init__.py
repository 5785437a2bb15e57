"""Small shared pieces (JSON codec, dict helpers)."""
