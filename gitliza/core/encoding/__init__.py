"""The board written down, pure: entities to plain data (codec) and TOML blobs (tomlblob, tomlfast),
where each lives in a state tree (layout) and the format's versions, the commit message of a
transition (record), the materialized `.liza/state.yaml` (yamlview, retention, viewedits)."""
