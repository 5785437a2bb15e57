"""Community sources (Quix Streams' ``quixstreams.sources.community`` paths)."""
