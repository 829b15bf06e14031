"""The offset JSON file of `kafpy delete-records`."""

import pytest

from kafpy.cli.command_line_utils import OneLineError
from kafpy.cli.delete_records import parse_offset_json
from kafpy.common.topic_partition import TopicPartition


def test_kafkas_format_in_file_order() -> None:
    text = '{"partitions": [{"topic": "foo", "partition": 1, "offset": 1}, {"topic": "bar", "partition": 0, "offset": -1}], "version": 1}'
    assert parse_offset_json(text, "f") == [
        (TopicPartition("foo", 1), 1),
        (TopicPartition("bar", 0), -1),
    ]
    # version defaults to 1, as Kafka's EarliestVersion
    assert parse_offset_json('{"partitions": []}', "f") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1", "not a valid JSON"),
        ("[]", "expected a JSON object"),
        ('{"version": 3, "partitions": []}', "not supported version field value 3"),
        ('{"version": 1}', "missing partitions field"),
        ('{"partitions": [{"partition": 0, "offset": 1}]}', "partitions[0] has no topic name"),
        (
            '{"partitions": [{"topic": "a", "partition": true, "offset": 1}]}',
            "partition is not an integer",
        ),
        ('{"partitions": [{"topic": "a", "partition": 0, "offset": -2}]}', "the offset -1"),
        (
            '{"partitions": [{"topic": "a", "partition": 0, "offset": 1}, {"topic": "a", "partition": 0, "offset": 2}]}',
            "duplicate topic partitions: a-0",
        ),
    ],
)
def test_bad_files_are_refused_naming_the_problem(text: str, message: str) -> None:
    with pytest.raises(OneLineError, match=message.replace("[", r"\[").replace("]", r"\]")):
        parse_offset_json(text, "f")
