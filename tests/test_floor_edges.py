"""Each shipped profile's house edge is shipped with the floor (floor/reports/edges.py, floor/reports/profile_edges.py;
issue 44): the figure served is the one controller/rules/shoe_math.py computes, to the last bit, and a profile whose
rules changed (or other mathematics) is never served an edge computed for something else."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.rules.profile_model import Profile
from controller.rules.profiles import list_profiles, load_profile, parse_profile
from controller.rules.shoe_math import FiniteEdge, finite_house_edge
from floor.reports import edges, profile_edges
from floor.reports.play_rounds import profile_edge

PT_2001 = load_profile("pt-2001").path


@pytest.mark.parametrize("name", list_profiles())
def test_the_shipped_edge_is_the_computed_one(name: str) -> None:
    p = load_profile(name)
    computed = finite_house_edge(p)
    assert edges.shipped_edge(p) == computed.basic_strategy  # exact: the float itself, not a rounding of it
    assert profile_edges.EDGES[name][2] == computed.composition_dependent
    assert profile_edge(name) == computed.basic_strategy


def test_every_shipped_profile_has_a_current_entry() -> None:
    assert edges.main(["--check"]) == 0 and edges.stale() == []
    assert set(profile_edges.EDGES) == set(list_profiles())


class Computed:
    """A stand-in for shoe_math (its 9 s are not what is tested): counts its calls, answers a figure no profile
    has, so the edge served is seen to be the computed one."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, p: Profile) -> FiniteEdge:
        self.calls.append(p.name)
        return FiniteEdge(p.decks, composition_dependent=0.25, basic_strategy=0.5)


def changed(replace: tuple[str, str]) -> Profile:
    text = Path(PT_2001).read_text(encoding="utf-8")
    assert text.count(replace[0]) == 1, replace
    return parse_profile(text.replace(*replace), source="pt-2001.toml")


@pytest.mark.parametrize(
    "replace",
    [
        ("decks = 6 ", "decks = 4 "),  # r.3 allows four: another shoe
        ('double = "9-11"', 'double = "any"'),  # another rule of play, the same name
    ],
)
def test_a_profile_whose_rules_changed_is_computed_not_served_the_shipped_edge(
    replace: tuple[str, str],
) -> None:
    p = changed(replace)
    assert p.name == "pt-2001" and edges.profile_digest(p) != profile_edges.EDGES["pt-2001"][0]
    compute = Computed()
    assert edges.shipped_edge(p) is None
    assert edges.house_edge(p, compute) == 0.5 and compute.calls == ["pt-2001"]
    # the profile as shipped is served without computing
    assert edges.house_edge(load_profile("pt-2001"), compute) == profile_edges.EDGES["pt-2001"][1]
    assert compute.calls == ["pt-2001"]


@pytest.fixture
def other_code(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(edges, "code_version", lambda: "0" * 64)
    yield


@pytest.mark.usefixtures("other_code")
def test_other_mathematics_serves_nothing_shipped() -> None:
    compute = Computed()
    for name in list_profiles():
        assert edges.house_edge(load_profile(name), compute) == 0.5
    assert compute.calls == list_profiles()
    assert edges.stale() == list_profiles()
