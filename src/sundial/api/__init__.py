"""See DESIGN.md section 2 for what this layer owns."""
