"""(being written)"""
from __future__ import annotations

METHODS: dict = {}
"""NArray methods this module adds (name -> function taking the array first)."""

__all__: list = []
