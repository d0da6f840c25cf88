"""A judge against people: agreement with human labels, and two judges compared."""
