"""Direction partitions of ``llm_records``: each direction can be (re)generated on its own.

Directions differ in cost and in how often they need redoing (a new Chinese prompt, a new
generator for one target language), so a rerun of one direction must not touch the others.
"""
import dagster as dg

from skill_assets.lib.common.language import DIRECTIONS

direction_partitions = dg.StaticPartitionsDefinition(list(DIRECTIONS))
