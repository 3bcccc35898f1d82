"""Foundations every layer may use: configuration, errors, ids, media decoding helpers, process trees."""
