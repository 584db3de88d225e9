"""catalog.picker_search and catalog.picker_model: ranking, narrowing, lazy completion, selection, content merge."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sessdex.catalog.queries.picker_source import PickerRow
from sessdex.catalog.tui.fuzzy import normalize_query
from sessdex.catalog.tui.picker_model import PickerModel
from sessdex.catalog.tui.picker_search import SearchIndex, fuzzy_pattern, mark_word_starts
from sessdex.core.discovery import id_prefix_length

ROOT = "/agent/sessions"


def row(session_id: str, title: str | None = None, first: str = "hello", cwd: str = "/home/u/proj",
        folder: str = "--home-u-proj--") -> PickerRow:
    return PickerRow(path=f"{ROOT}/{folder}/2025-01-01T00-00-00-000Z_{session_id}.jsonl", session_id=session_id,
                     cwd=cwd, title=title, first_message=first, message_count=2, modified_ms=0)


def ids(index: SearchIndex, positions: list[int]) -> list[str]:
    return [index.rows[position].session_id for position in positions]


def complete(index: SearchIndex, query: str, previous=None):
    search = index.search(query, previous)
    while not search.advance(7):
        pass
    return search


# Rows are newest first, as every source gives them.
RANKING_ROWS = [
    row("w4000000", first="zzz", cwd="/home/u/pxaxrxsxexr"),  # weak fuzzy (cwd)
    row("s3000000", title="p-a-r-s-e-r", first="zzz"),  # strong fuzzy (title)
    row("b2000000", first="please fix the parser now"),  # weak substring (first message)
    row("i1000000", title="Unparser cleanup"),  # strong substring inside a word
    row("a0000001", title="Parser rewrite"),  # strong substring at a word start
    row("n0000000", title="nothing here", first="zzz"),
    row("a0000002", title="the PARSER again"),  # strong substring at a word start, older
]


def test_rank_order_then_newest_first() -> None:
    index = SearchIndex(RANKING_ROWS, ROOT)
    search = complete(index, "parser")
    assert ids(index, search.ranked()) == ["a0000001", "a0000002", "i1000000", "b2000000", "s3000000", "w4000000"]
    assert ids(index, search.head) == ["a0000001", "a0000002", "i1000000", "b2000000", "s3000000"]
    assert ids(index, search.weak_fuzzy()) == ["w4000000"]


def test_id_prefix_is_a_word_start_hit() -> None:
    index = SearchIndex([row("zz000001", title="about b2"), row("b2c00000", title="x")], ROOT)
    assert ids(index, complete(index, "b2c").ranked()) == ["b2c00000"]
    assert ids(index, complete(index, "b2").ranked()) == ["zz000001", "b2c00000"]


def test_a_fuzzy_match_stays_inside_one_field() -> None:
    # "ab" would only match across id ("a...") and title ("b"), or across first message and cwd.
    index = SearchIndex([row("a0000000", title="b", first="a", cwd="/b")], ROOT)
    assert complete(index, "xb").ranked() == []
    assert complete(index, "0b").ranked() == []
    assert complete(index, "a0b").ranked() == []


def test_the_sessions_root_is_not_searched_but_the_rest_of_the_path_is() -> None:
    index = SearchIndex([row("a0000000", folder="--work-acme--")], ROOT)
    assert complete(index, "agent").ranked() == []
    assert complete(index, "acme").ranked() == [0]
    assert complete(index, "2025-01-01").ranked() == [0]


def test_control_characters_and_newlines_do_not_join_fields() -> None:
    index = SearchIndex([row("a0000000", title="one\ntwo", first="x\x1fy")], ROOT)
    assert complete(index, "one two").ranked() == [0]
    assert complete(index, "x y").ranked() == [0]


def test_a_line_break_in_an_id_does_not_shift_the_word_starts_of_later_rows() -> None:
    index = SearchIndex([row("a\nb"), row("c0000000", title="zz parser"), row("d0000000", title="unparser")], ROOT)
    assert ids(index, complete(index, "parser").ranked()) == ["c0000000", "d0000000"]


def test_the_weak_fuzzy_rank_is_computed_lazily() -> None:
    rows = [row(f"{n:08x}", first=f"q{'-' * 5}w{'-' * 5}e {n}") for n in range(500)]
    index = SearchIndex(rows, ROOT)
    search = index.search("qwe")
    assert not search.complete and search.ranked() == []
    search.fill(5, max_rows=1000)
    assert len(search.ranked()) >= 5 and not search.complete
    while not search.advance(10):
        pass
    assert search.ranked() == list(range(500))


def corpus(seed: int, count: int = 300) -> list[PickerRow]:
    generator = random.Random(seed)
    words = ["parser", "fix", "deploy", "api", "cache", "Auth", "réseau", "日本", "x_y", "v2"]
    return [row(f"{generator.getrandbits(32):08x}{n:04d}",
                title=" ".join(generator.sample(words, 2)) if generator.random() < 0.3 else None,
                first=" ".join(generator.choices(words, k=6)), cwd="/home/u/" + generator.choice(words),
                folder=generator.choice(["--a--", "-b", "deep/c"])) for n in range(count)]


@pytest.mark.parametrize("word", ["parser", "deploy api", "fxp", "日本", "ré", "ab"])
def test_narrowing_while_typing_gives_the_same_ranking_as_a_fresh_search(word: str) -> None:
    index = SearchIndex(corpus(7), ROOT)
    previous = None
    for length in range(1, len(word) + 1):
        typed = index.search(word[:length], previous)
        typed.fill(10, max_rows=50)  # leave it incomplete: narrowing must keep the untested rows
        previous = typed
    while not previous.advance(40):
        pass
    assert previous.ranked() == complete(index, word).ranked()


def reference_ranking(index: SearchIndex, query: str) -> list[int]:
    """The ranking by the straightforward test of each row, as the module docstring defines the ranks: each term
    of the query ranked on its own, a row at the worst rank of its terms."""
    needle = normalize_query(query)
    if not needle:
        return list(range(len(index.rows)))
    ranked = []
    for row, (strong, weak) in enumerate(zip(index.strong, index.weak)):
        ranks = [term_rank(term, strong, weak) for term in needle.split(" ")]
        if None not in ranks:
            ranked.append((max(ranks), row))
    return [row for _, row in sorted(ranked)]


def term_rank(term: str, strong: str, weak: str) -> int | None:
    fuzzy = fuzzy_pattern(term).search
    if fuzzy(strong):
        if mark_word_starts(term) in mark_word_starts(strong):
            return 0
        if term in strong:
            return 1
        return 2 if term in weak else 3
    if term in weak:
        return 2
    return 4 if fuzzy(weak) else None


HOSTILE = ["\x1b[31mred", "a\nb", "x\x1fy", "\x01start", "İstanbul", "ǅungla", "ﬁle", "e\u0301t\u00e9", "日本語", "🙂 ok",
           "\u200bzero", "--dash--", "CamelCase", "\x7fdel", "Tab\there"]
WORDS = ["parser", "fix", "deploy", "api", "cache", "Auth", "réseau", "日本", "x_y", "v2", "p", "a"]


@st.composite
def hostile_rows(draw) -> list[PickerRow]:
    text = st.lists(st.sampled_from(WORDS + HOSTILE), max_size=4).map(" ".join)
    count = draw(st.integers(1, 40))
    return [PickerRow(path=f"{ROOT}/{draw(st.sampled_from(['--a--', 'b', 'deep/日本']))}/{n}.jsonl",
                      session_id=draw(st.sampled_from([f"{n:04x}aa", f"{n:02d}İ\n", f"p{n}"])), cwd=draw(text),
                      title=draw(st.none() | text), first_message=draw(text), message_count=1, modified_ms=0)
            for n in range(count)]


@settings(max_examples=150, deadline=None)
@given(rows=hostile_rows(), word=st.sampled_from(["parser", "fix a", "日本", "ré", "İs", "a", "x y", "-d", "ﬁ", "é",
                                                  "tab", "p v2", "🙂", "fix api", "a p v2", "x y x", "p a-d"]),
       steps=st.lists(st.tuples(st.integers(0, 12), st.integers(1, 9)), min_size=12, max_size=12))
def test_narrowed_lazy_searches_rank_as_the_test_of_each_row(rows: list[PickerRow], word: str,
                                                            steps: list[tuple[int, int]]) -> None:
    # Typed a character at a time, each search left at a different point of its passes before the next narrows it.
    index = SearchIndex(rows, ROOT)
    previous = None
    for length in range(1, len(word) + 1):
        search = index.search(word[:length], previous)
        heads = [list(search.head)]
        advances, size = steps[length % len(steps)]
        for _ in range(advances):
            search.advance(size)
            heads.append(list(search.head))
        final = complete(index, word[:length]).head
        assert all(final[:len(head)] == head for head in heads)  # what is shown only grows at its end
        previous = search
    while not previous.advance(5):
        pass
    expected = reference_ranking(index, word)
    assert previous.ranked() == complete(index, word).ranked() == expected
    assert [previous.rank_of(row) is not None for row in range(len(rows))] == [row in expected for row in range(len(rows))]


@pytest.mark.parametrize("word", ["p", "parser", "deploy api", "fxp", "日本", "ré", "a", "x_y", "v2 fix"])
def test_a_fresh_search_ranks_as_the_test_of_each_row(word: str) -> None:
    index = SearchIndex(corpus(12, 400), ROOT)
    search = complete(index, word)
    assert search.ranked() == reference_ranking(index, word)
    assert search.ranked()  # the words do match rows


def test_narrowing_from_a_search_stopped_in_any_pass_keeps_its_untested_rows() -> None:
    # Only id/title fuzzy matches (rank 3): "pa" completes, "par" tests 3 of its 10 rank-3 candidates, "pars"
    # narrows from there; and the same for the weak pass (rank 4, in the first message).
    for fields in ({"title": "p-a-r-s-e"}, {"first": "p-a-r-s-e"}):
        index = SearchIndex([row(f"{n:08x}", **fields) for n in range(10)], ROOT)
        stopped = index.search("par", complete(index, "pa"))
        stopped.advance(3)
        if "first" in fields:
            stopped.advance(3)  # the middle pass ends at once (every row pending), then 3 weak tests
        assert len(stopped.ranked()) < 10 and not stopped.complete
        narrowed = index.search("pars", stopped)
        while not narrowed.advance(4):
            pass
        assert narrowed.ranked() == list(range(10))


def test_a_long_run_of_keys_typed_before_any_background_step_narrows_without_recursing() -> None:
    index = SearchIndex(corpus(3, 50), ROOT)
    word = "a" * 1_200  # each key's search narrows the previous one, none of them advanced yet (> recursion limit)
    search = None
    for length in range(1, len(word) + 1):
        search = index.search(word[:length], search)
    while not search.advance(10):
        pass
    assert search.ranked() == reference_ranking(index, word) == []
    assert complete(index, "a").ranked() == reference_ranking(index, "a")


def test_a_query_of_terms_looks_for_its_last_term_only_where_every_earlier_term_is(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 20 titles hold "deploy"; every first message holds its letters apart (a weak fuzzy match: still possible rows)
    # and "a" (found anywhere): typing "deploy ap" tests "a" and "ap" in those 20 rows only, not in all 400.
    rows = [row(f"{n:08x}", title="deploy api" if n % 20 == 0 else None, first="d e p l o y a p i")
            for n in range(400)]
    index = SearchIndex(rows, ROOT)
    looked_in: list[int] = []
    term_rows = index.term_rows

    def counted(term: str, among=None):
        looked_in.append(len(rows) if among is None else len(among))
        return term_rows(term, among)

    search = complete(index, "deploy")
    monkeypatch.setattr(index, "term_rows", counted)
    for query in ("deploy a", "deploy ap", "deploy api x"):
        search = index.search(query, search)
        while not search.advance(50):
            pass
        assert search.ranked() == reference_ranking(index, query)
    assert looked_in and max(looked_in) == 20


def test_a_typed_term_is_looked_for_over_every_row_in_steps() -> None:
    rows = corpus(5, 300)
    index, fresh = SearchIndex(rows, ROOT), SearchIndex(rows, ROOT)
    steps = 0
    while not index.warm_term("fix", 64):
        steps += 1
        assert not index.knows_term("fix")
    assert steps == 4 and index.knows_term("fix") and index.term_rows("fix") == fresh.term_rows("fix")
    assert not index.warm_term("api", 64) and not index.warm_term("cache", 64)  # interleaved with another term
    while not index.warm_term("api", 100):
        pass
    assert index.term_rows("api") == fresh.term_rows("api") and any(index.term_rows("api"))


def test_a_screenful_is_ranked_without_testing_every_row() -> None:
    rows = [row(f"{n:08x}", title="parser" if n % 2 else None, first="the parser") for n in range(400)]
    search = SearchIndex(rows, ROOT).search("parser")
    search.fill(21, max_rows=2000)
    assert search.head[:21] == [n for n in range(400) if n % 2][:21] and not search.head_complete
    while not search.advance(50):
        pass
    assert search.head == [n for n in range(400) if n % 2] + [n for n in range(400) if not n % 2]


def test_erasing_back_reuses_the_earlier_search_and_ranks_as_a_fresh_one() -> None:
    # The query line (prompt_toolkit's buffer) hands the model each whole query as it is edited.
    model = PickerModel("project", corpus(4, 200), sessions_root=ROOT)
    model.set_query("dep")
    after_dep = model._search
    model.set_query("deploy a")
    for query in ("deploy ", "deploy", "deplo", "depl", "dep"):  # five Backspaces
        model.set_query(query)
    assert model.query == "dep" and model._search is after_dep
    fresh = PickerModel("project", corpus(4, 200), sessions_root=ROOT)
    fresh.set_query("dep")
    while not (model.advance_search(50) and fresh.advance_search(50)):
        pass
    assert model.results == fresh.results
    model.set_query("depx")  # a new branch: "dep" stays, "deploy a" is forgotten
    model.set_query("dep")
    assert model._search is after_dep


def test_id_prefix_length() -> None:
    assert id_prefix_length([]) == 8
    assert id_prefix_length(["abcdefgh11", "abcdefgh22"]) == 9
    assert id_prefix_length(["abcdefgh11", "abcdefgh11"]) == 8
    assert id_prefix_length(iter(["abc", "abcdefghij", "abcdefgh"])) == 9  # one id the start of another


def test_id_prefix_length_is_the_shortest_length_telling_the_ids_apart() -> None:
    # Against the definition itself, on ids short and long, repeated, one the start of another.
    import random

    def by_definition(ids: list[str]) -> int:
        longest = max((len(value) for value in ids), default=8)
        length = 8
        while length < longest and len({value[:length] for value in ids}) < len(set(ids)):
            length += 1
        return length

    draw = random.Random(7)
    for _ in range(3000):
        stem = "".join(draw.choice("ab") for _ in range(draw.randint(0, 14)))
        ids = [stem[:draw.randint(0, len(stem))] + "".join(draw.choice("ab") for _ in range(draw.randint(0, 6)))
               for _ in range(draw.randint(0, 8))]
        ids += ids[:2]
        assert id_prefix_length(ids) == by_definition(ids), ids


# -- the model ----------------------------------------------------------------------------------------

def test_model_selection_moves_and_clamps() -> None:
    model = PickerModel("project", corpus(1, 40), sessions_root=ROOT, page_size=10)
    model.move(-1)
    assert model.selected == 0
    model.page(1)
    assert model.selected == 10
    model.last()
    assert model.selected == 39
    model.move(5)
    assert model.selected == 39
    model.page(-1)
    assert model.selected == 29
    model.first()
    assert model.selected == 0
    assert model.window(10) == list(range(10))
    model.last()
    assert model.window(10) == list(range(30, 40))


def test_model_query_replacement_searches_again() -> None:
    model = PickerModel("project", corpus(2, 60), sessions_root=ROOT)
    model.set_query("fix pa")
    assert model.query == "fix pa"
    model.set_query("")
    assert model.query == "" and len(model.results) == 60


def test_content_matches_rank_after_strong_hits_and_before_weak_fuzzy_ones() -> None:
    rows = [row("c0000000", first="nothing"), row("w0000000", first="d-e-e-p"), row("t0000000", title="deep dive")]
    model = PickerModel("all", rows, sessions_root=ROOT)
    model.set_query("deep")
    while not model.advance_search(100):
        pass
    assert [model.rows[i].session_id for i in model.results] == ["t0000000", "w0000000"]
    assert model.content_pending
    model.set_content_matches(("deep", "all"), {rows[0].path: "a \x02deep\x03 thought", rows[2].path: "deep"})
    assert not model.content_pending
    assert [model.rows[i].session_id for i in model.results] == ["t0000000", "c0000000", "w0000000"]
    assert model.snippet(0) == "a \x02deep\x03 thought"
    model.set_content_matches(("dee", "all"), {rows[1].path: "stale"})  # another query: ignored
    assert model.snippet(1) is None
    model.set_query("dee")
    assert model.snippet(0) is None and [model.rows[i].session_id for i in model.results] == ["t0000000",
                                                                                              "w0000000"]


def test_model_scope_switch_waits_for_rows() -> None:
    model = PickerModel("project", [row("p0000000")], sessions_root=ROOT)
    assert model.toggle_scope() == "all" and model.loading and model.results == []
    model.set_rows("all", [row("a0000000"), row("p0000000")])
    assert not model.loading and len(model.results) == 2
    assert model.toggle_scope() == "project" and len(model.results) == 1


def test_a_moved_selection_stays_on_its_session_when_rows_or_content_change() -> None:
    rows = [row("a0000000"), row("b0000000"), row("c0000000")]
    model = PickerModel("project", rows, sessions_root=ROOT)
    model.move(2)
    newer = [row("n0000000"), *rows]
    model.set_rows("project", newer)
    assert model.selected_row() == rows[2]
    model.first()
    model.set_rows("project", [row("m0000000"), *newer])
    assert model.selected == 0 and model.selected_row().session_id == "m0000000"


def test_a_moved_selection_follows_its_session_when_content_hits_arrive() -> None:
    rows = [row("c0000000", first="nothing"), row("w0000000", first="d-e-e-p"), row("t0000000", title="deep")]
    model = PickerModel("all", rows, sessions_root=ROOT)
    model.set_query("deep")
    model.last()
    assert model.selected_row() == rows[1]  # the weak fuzzy hit, last
    model.set_content_matches(("deep", "all"), {rows[0].path: "\x02deep\x03"})
    assert model.selected_row() == rows[1] and model.selected == 2
