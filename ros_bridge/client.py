"""A client of a running bridge's Query service: read-only Cypher on the live memory.

While the bridge runs, Kuzu lets no other process open its memory; ``emem-graph cypher --ros``
sends the statement to the bridge instead (service ``/<node>/query``), which runs it in a
read-only transaction with its own row limit and timeout. rclpy is imported on first use.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from emem_graph.errors import BackendUnavailableError, InvalidInputError, ReadOnlyQueryError
from emem_graph.storage.statement_runner import CypherResult
from ros_bridge.node import import_ros

DEFAULT_NODE = "emem_graph"
WAIT_FOR_SERVICE_S = 5.0


def query_over_ros(
    cypher: str,
    params: dict[str, Any] | None = None,
    *,
    node: str = DEFAULT_NODE,
    limit: int | None = None,
    timeout_s: float = 30.0,
) -> CypherResult:
    """Run one read-only Cypher statement through the Query service of the bridge ``node``.

    Args:
        cypher: one Cypher statement; the bridge refuses writes.
        params: a value for each ``$parameter`` of the statement.
        node: the bridge's node name (``node_name`` of its config), or a full service name
            starting with ``/``.
        limit: the most rows to keep here (the bridge applies its own query_row_limit first).
        timeout_s: how long to wait for the service to appear and for its answer.

    Returns:
        The columns and rows, as run_cypher returns them.

    Raises:
        BackendUnavailableError: rclpy or emem_interfaces is missing, the service does not
            appear or does not answer in time.
        ReadOnlyQueryError: the bridge refused the statement as a write.
        InvalidInputError: the bridge refused the statement for another reason.
    """
    ros = import_ros()
    service = node if node.startswith("/") else f"/{node.strip('/')}/query"
    context = ros.context.Context()
    ros.rclpy.init(context=context, signal_handler_options=ros.signals.SignalHandlerOptions.NO)
    client_node = ros.rclpy.create_node("emem_graph_cypher_client", context=context)
    executor = ros.executors.SingleThreadedExecutor(context=context)
    executor.add_node(client_node)
    spinner = threading.Thread(target=_spin, args=(executor,), daemon=True)
    spinner.start()
    try:
        response = _call(ros, client_node, service, cypher, params, timeout_s)
    finally:
        executor.shutdown(timeout_sec=2.0)
        spinner.join(timeout=2.0)
        client_node.destroy_node()
        ros.rclpy.try_shutdown(context=context)
    if not response.success:
        error = response.error or "the bridge refused the statement"
        if "read-only" in error or "refused" in error:
            raise ReadOnlyQueryError(error)
        raise InvalidInputError(error)
    return _result(json.loads(response.rows_json), limit)


def _call(
    ros: Any,
    client_node: Any,
    service: str,
    cypher: str,
    params: dict[str, Any] | None,
    timeout_s: float,
) -> Any:
    client = client_node.create_client(ros.srv.Query, service)
    if not client.wait_for_service(timeout_sec=min(timeout_s, WAIT_FOR_SERVICE_S)):
        raise BackendUnavailableError(
            f"no bridge answers at {service} (is `emem-graph ros` running, with this "
            "node_name, in this ROS_DOMAIN_ID?)"
        )
    request = ros.srv.Query.Request(cypher=cypher, params_json=json.dumps(params or {}))
    future = client.call_async(request)
    answered = threading.Event()
    future.add_done_callback(lambda _: answered.set())
    if not answered.wait(timeout_s):
        client.remove_pending_request(future)
        raise BackendUnavailableError(f"{service} did not answer within {timeout_s:g} s")
    return future.result()


def _spin(executor: Any) -> None:
    try:
        executor.spin()
    except Exception:  # the context was shut down under it: the call is over
        return


def _result(payload: dict[str, Any], limit: int | None) -> CypherResult:
    columns = list(payload["columns"])
    rows = [[row.get(c) for c in columns] for row in payload["rows"]]
    truncated = bool(payload.get("truncated"))
    if limit is not None and len(rows) > limit:
        rows, truncated = rows[:limit], True
    return CypherResult(columns=columns, rows=rows, truncated=truncated)
