"""Replica assignment: the seed's worked example, Kafka's documented examples, errors, properties."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafpy.admin.replica_assignment import (
    BrokerMetadata,
    assign_replicas_to_brokers,
    parse_added_replica_assignment,
    parse_replica_assignment,
    rack_alternated_broker_list,
    validate_replica_assignment,
)
from kafpy.common.errors import (
    AdminCommandFailedError,
    AdminOperationError,
    BrokerNotAvailableError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
)

THREE = [BrokerMetadata(0), BrokerMetadata(1), BrokerMetadata(2)]


def test_seed_worked_example_start_index_1_shift_2() -> None:
    # The seed fixes start index 1 and shift 2 (both random in Kafka); reproduce it through
    # a random source that returns exactly those two draws.
    class Draws(random.Random):
        def __init__(self, values: list[int]) -> None:
            super().__init__()
            self.values = values

        def randrange(self, *args: object, **kwargs: object) -> int:  # type: ignore[override]
            return self.values.pop(0)

    result = assign_replicas_to_brokers(THREE, 3, 3, rng=Draws([1, 2]))
    assert result == {0: [1, 2, 0], 1: [2, 0, 1], 2: [0, 1, 2]}


def test_seed_worked_example_growing_to_4_partitions() -> None:
    # alter: fixed start index = position of partition 0's first replica (broker 1) = 1,
    # start partition id = current count 3
    assert assign_replicas_to_brokers(THREE, 1, 3, fixed_start_index=1, start_partition_id=3) == {
        3: [1, 2, 0]
    }


def test_kafkas_documented_rack_unaware_example() -> None:
    five = [BrokerMetadata(i) for i in range(5)]
    result = assign_replicas_to_brokers(five, 10, 3, fixed_start_index=0)
    # AdminUtils' table: p0..p4 1st replicas on brokers 0..4, p5..p9 again; followers shifted
    assert [result[p][0] for p in range(10)] == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4]
    assert result[0] == [0, 1, 2]
    assert result[5] == [0, 2, 3]  # the shift grew by one after a full round of brokers


def test_kafkas_documented_rack_alternated_list_and_assignment() -> None:
    racks = {0: "rack1", 1: "rack3", 2: "rack3", 3: "rack2", 4: "rack2", 5: "rack1"}
    assert rack_alternated_broker_list(racks) == [0, 3, 1, 5, 4, 2]
    brokers = [BrokerMetadata(b, r) for b, r in racks.items()]
    result = assign_replicas_to_brokers(brokers, 7, 3, fixed_start_index=0)
    assert result == {
        0: [0, 3, 1],
        1: [3, 1, 5],
        2: [1, 5, 4],
        3: [5, 4, 2],
        4: [4, 2, 0],
        5: [2, 0, 3],
        6: [0, 4, 2],
    }
    nine = {b: f"rack{b // 3 + 1}" for b in range(9)}
    assert rack_alternated_broker_list(nine) == [0, 3, 6, 1, 4, 7, 2, 5, 8]


@pytest.mark.parametrize(
    ("partitions", "rf", "brokers", "error", "message"),
    [
        (0, 1, THREE, InvalidPartitionsError, "number of partitions must be larger than 0"),
        (1, 0, THREE, InvalidReplicationFactorError, "replication factor must be larger than 0"),
        (
            1,
            3,
            THREE[:2],
            InvalidReplicationFactorError,
            "replication factor: 3 larger than available brokers: 2",
        ),
        (
            1,
            1,
            [],
            InvalidReplicationFactorError,
            "replication factor: 1 larger than available brokers: 0",
        ),
        (
            1,
            1,
            [BrokerMetadata(0, "a"), BrokerMetadata(1)],
            AdminOperationError,
            "Not all brokers have rack information for replica rack aware assignment",
        ),
    ],
)
def test_errors_use_kafkas_words(
    partitions: int, rf: int, brokers: list[BrokerMetadata], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as info:
        assign_replicas_to_brokers(brokers, partitions, rf)
    assert str(info.value) == message


def test_parse_replica_assignment() -> None:
    assert parse_replica_assignment("1:2:0,2:0:1,0:1:2") == {
        0: [1, 2, 0],
        1: [2, 0, 1],
        2: [0, 1, 2],
    }
    assert parse_replica_assignment(" 1 : 2 ") == {0: [1, 2]}


def test_parse_replica_assignment_refuses_duplicates() -> None:
    with pytest.raises(AdminCommandFailedError) as info:
        parse_replica_assignment("1:2:1:2,0:1:2")
    assert str(info.value) == "Partition replica lists may not contain duplicate entries: 1,2"


def test_parse_replica_assignment_refuses_different_replication_factors() -> None:
    with pytest.raises(AdminOperationError) as info:
        parse_replica_assignment("1:2:0,2:0")
    assert str(info.value).startswith("Partition 1 has different replication factor: 2:0")


def test_parse_replica_assignment_refuses_non_integers() -> None:
    with pytest.raises(AdminCommandFailedError, match="'x' \\(partition 1\\) is not a broker id"):
        parse_replica_assignment("1:2,x:1")
    with pytest.raises(AdminCommandFailedError, match="is not a broker id"):
        parse_replica_assignment("1:2,,")


def test_parse_added_replica_assignment_skips_existing_partitions() -> None:
    assert parse_added_replica_assignment("1:2,2:1,0:1,1:0", 2) == {2: [0, 1], 3: [1, 0]}


def test_validate_replica_assignment() -> None:
    validate_replica_assignment({3: [0, 1]}, 2, {0, 1, 2})
    with pytest.raises(BrokerNotAvailableError, match="available brokers: 0, 1, 2"):
        validate_replica_assignment({3: [0, 9]}, 2, {0, 1, 2})
    with pytest.raises(InvalidReplicaAssignmentError, match="Duplicate brokers"):
        validate_replica_assignment({3: [1, 1]}, 2, {0, 1, 2})
    with pytest.raises(InvalidReplicaAssignmentError, match="partition 0 has 2 while partitions"):
        validate_replica_assignment({3: [1]}, 2, {0, 1, 2})


def _check_basic(result: dict[int, list[int]], partitions: int, rf: int, ids: set[int]) -> None:
    assert sorted(result) == list(range(partitions))
    for replicas in result.values():
        assert len(replicas) == rf
        assert len(set(replicas)) == rf, f"a broker twice in {replicas}"
        assert set(replicas) <= ids
    leaders = Counter(replicas[0] for replicas in result.values())
    counts = [leaders.get(b, 0) for b in ids]
    assert max(counts) - min(counts) <= 1, f"leaders not spread evenly: {leaders}"


@settings(max_examples=150, deadline=None)
@given(
    n_brokers=st.integers(1, 12),
    partitions=st.integers(1, 60),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
)
def test_rack_unaware_properties(
    n_brokers: int, partitions: int, data: st.DataObject, seed: int
) -> None:
    rf = data.draw(st.integers(1, n_brokers))
    ids = data.draw(
        st.lists(st.integers(0, 1000), min_size=n_brokers, max_size=n_brokers, unique=True)
    )
    brokers = [BrokerMetadata(b) for b in sorted(ids)]
    result = assign_replicas_to_brokers(brokers, partitions, rf, rng=random.Random(seed))
    _check_basic(result, partitions, rf, set(ids))


@settings(max_examples=150, deadline=None)
@given(
    n_brokers=st.integers(1, 12),
    partitions=st.integers(1, 60),
    data=st.data(),
    seed=st.integers(0, 2**32 - 1),
)
def test_rack_aware_properties(
    n_brokers: int, partitions: int, data: st.DataObject, seed: int
) -> None:
    rf = data.draw(st.integers(1, n_brokers))
    n_racks = data.draw(st.integers(1, n_brokers))
    # every rack gets at least one broker, the rest are spread at random
    racks = [f"r{i}" for i in range(n_racks)] + [
        f"r{data.draw(st.integers(0, n_racks - 1))}" for _ in range(n_brokers - n_racks)
    ]
    brokers = [BrokerMetadata(i, racks[i]) for i in range(n_brokers)]
    rack_of = {b.id: b.rack for b in brokers}
    result = assign_replicas_to_brokers(brokers, partitions, rf, rng=random.Random(seed))
    _check_basic(result, partitions, rf, set(rack_of))
    for replicas in result.values():
        used = {rack_of[b] for b in replicas}
        if rf <= n_racks:
            assert len(used) == rf, f"replicas {replicas} share a rack"
        else:
            assert len(used) == n_racks, f"replicas {replicas} miss a rack"
