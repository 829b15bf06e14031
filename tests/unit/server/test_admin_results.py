"""The admin APIs' results: an error per topic or resource, logged by whose fault it is,
and whole requests refused with one error."""

from __future__ import annotations

import logging

import pytest

from kafpy.common.errors import TopicExistsError
from kafpy.common.logger import component_logger
from kafpy.metadata.errors import SessionExpiredError
from kafpy.protocol.errors import Errors
from kafpy.server.admin_results import duplicates, error_response, set_error

LOG = component_logger("kafpy.server.AdminManager", "Admin Manager on Broker 0")


def test_a_kafka_error_is_the_requests_fault(caplog: pytest.LogCaptureFixture) -> None:
    result: dict[str, object] = {"name": "t", "error_code": 0, "error_message": None}
    with caplog.at_level(logging.INFO):
        set_error(LOG, result, TopicExistsError("Topic 't' already exists."), "Creating t")
    assert result == {
        "name": "t",
        "error_code": Errors.TOPIC_ALREADY_EXISTS,
        "error_message": "Topic 't' already exists.",
    }
    [record] = caplog.records
    assert (record.levelno, record.exc_info) == (logging.INFO, None)
    assert "Creating t: Topic 't' already exists." in record.getMessage()


def test_any_other_exception_is_a_bug(caplog: pytest.LogCaptureFixture) -> None:
    result: dict[str, object] = {"error_code": 0, "error_message": None}
    try:
        raise ValueError("boom")
    except ValueError as e:
        set_error(LOG, result, e, "Creating t")
    assert result == {"error_code": Errors.UNKNOWN_SERVER_ERROR, "error_message": "boom"}
    [record] = caplog.records
    assert record.levelno == logging.ERROR and record.exc_info is not None


def test_an_expired_session_on_a_controller_only_operation_is_not_controller(
    caplog: pytest.LogCaptureFixture,
) -> None:
    expired = SessionExpiredError("Cannot list the children of /brokers/ids: expired.")
    result: dict[str, object] = {"name": "t", "error_code": 0, "error_message": None}
    with caplog.at_level(logging.INFO):
        set_error(LOG, result, expired, "Creating t", controller_only=True)
    assert result["error_code"] == Errors.NOT_CONTROLLER
    assert "no longer the controller" in str(result["error_message"])
    [record] = caplog.records
    assert (record.levelno, record.exc_info) == (logging.WARNING, None)
    # elsewhere an expired session stays an unexpected failure
    other: dict[str, object] = {"error_code": 0, "error_message": None}
    set_error(LOG, other, expired, "Describing t")
    assert other["error_code"] == Errors.UNKNOWN_SERVER_ERROR


def test_error_response_answers_every_item() -> None:
    topics = {"topics": [{"name": "a"}, {"name": "b"}]}
    assert error_response("create_partitions", topics, 41, "not the controller") == {
        "throttle_time_ms": 0,
        "results": [
            {"name": "a", "error_code": 41, "error_message": "not the controller"},
            {"name": "b", "error_code": 41, "error_message": "not the controller"},
        ],
    }
    resources = {"resources": [{"resource_type": 2, "resource_name": "a"}]}
    assert error_response("describe_configs", resources, 41)["results"] == [
        {
            "error_code": 41,
            "error_message": None,
            "resource_type": 2,
            "resource_name": "a",
            "configs": [],
        }
    ]
    with pytest.raises(ValueError, match="not an admin API"):
        error_response("produce", {}, 41)


def test_duplicates() -> None:
    assert duplicates(["a", "b", "a", "c", "b"]) == {"a", "b"}
    assert duplicates([]) == set()
