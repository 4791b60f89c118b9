"""``kubectl sundial resume`` reads a ScheduledJob's Quarantined condition to say how to lift it."""

from __future__ import annotations

from sundial.kubectl_plugin import actions


def test_the_quarantine_message_is_read_from_a_true_condition_only():
    quarantined = {
        "status": {
            "conditions": [
                {"type": "Ready", "status": "False", "message": "x"},
                {"type": "Quarantined", "status": "True", "message": "quarantineAfter: 3"},
            ]
        }
    }
    lifted = {"status": {"conditions": [{"type": "Quarantined", "status": "False"}]}}
    assert actions._quarantine_message(quarantined) == "quarantineAfter: 3"
    assert actions._quarantine_message(lifted) is None
    assert actions._quarantine_message({}) is None
    assert actions._quarantine_message({"status": {"conditions": ["junk"]}}) is None
