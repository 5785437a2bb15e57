"""Sinks maintained with the edge: CSV, the data-lake sink and the per-key silence tracker."""
