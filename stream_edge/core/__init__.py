"""Core building blocks of the edge runtime."""
