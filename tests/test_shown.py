"""``shown``: how error messages quote a caller's value (short, and never failing themselves)."""

from __future__ import annotations

from rated.shown import clipped, shown


class _NoRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_short_values_are_their_repr():
    assert shown("mail.a") == "'mail.a'"
    assert shown(5) == "5" and shown(None) == "None" and shown(True) == "True"
    assert shown("\ud800") == "'\\ud800'"  # a lone surrogate, escaped: the message stays encodable
    assert shown(10**150) == repr(10**150)


def test_long_values_are_cut_and_say_how_long_they_were():
    text = shown("x" * 1_000_000)
    assert text.startswith("'xxx") and text.endswith("... (1,000,000 characters)") and len(text) < 220
    assert shown(list(range(1000))).endswith(" characters as text)")


def test_values_without_a_usable_repr_are_described():
    assert shown(10**5000) == "an integer of about 5,000 digits"  # repr() raises over 4,300 digits
    assert shown(-(10**5000)) == "an integer of about 5,000 digits"
    assert shown(_NoRepr()) == "a _NoRepr object"


def test_names_are_clipped_to_the_limit():
    assert clipped("top_k") == "top_k"
    assert clipped("k" * 3000) == "k" * 37 + "..." and len(clipped("k" * 41)) == 40
