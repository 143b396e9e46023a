"""Leaf utilities shared by every layer: configuration, errors, logging, ids, hooks."""
