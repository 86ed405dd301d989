"""mintdim_beam: JSONL to fixed-width binary token shards, as an Apache Beam pipeline."""
