"""The domain every stage shares: skill files and their front matter, skill text and groups, ranking metrics."""
