"""Throwaway infrastructure for the demo and the tests (never used in production)."""
