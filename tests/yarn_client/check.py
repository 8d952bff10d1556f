"""Drives a live Weft with yarn-api-client's ResourceManager: every read
call it has, and kill. Run by tests/all/yarn_client.rs, which starts the
server, submits the apps and passes them in the environment:

  WEFT_BASE      the server, e.g. http://127.0.0.1:PORT
  WEFT_RUNNING   an app that runs until killed (submitted as anonymous)
  WEFT_FINISHED  an app that has finished

It prints one JSON object of what the client read, for the Rust side to
check against Weft's own /ws/v1 answers, and exits non-zero on the first
call that fails.
"""

import json
import os
import sys
import time

from yarn_api_client import ResourceManager
from yarn_api_client.errors import APIError

BASE = os.environ["WEFT_BASE"]
RUNNING = os.environ["WEFT_RUNNING"]
FINISHED = os.environ["WEFT_FINISHED"]


def refused(call, *args, **kwargs):
    """The call's HTTP status, which must be an error."""
    try:
        call(*args, **kwargs)
    except APIError as error:
        return str(error)
    raise AssertionError(f"{call.__name__}{args} succeeded; it should not")


# The constructor probes GET /cluster on each endpoint, skipping dead ones.
rm = ResourceManager(service_endpoints=["http://127.0.0.1:1", BASE], timeout=10)
assert rm.get_active_endpoint() == BASE, rm.get_active_endpoint()

seen = {}
info = rm.cluster_information().data["clusterInfo"]
assert info["haState"] == "ACTIVE" and info["state"] == "STARTED", info
seen["clusterInfo"] = info

seen["clusterMetrics"] = rm.cluster_metrics().data["clusterMetrics"]

scheduler = rm.cluster_scheduler().data["scheduler"]["schedulerInfo"]
assert scheduler["queueName"] == "root", scheduler
assert rm.cluster_scheduler_queue("default")["queueName"] == "default"

apps = rm.cluster_applications().data["apps"]["app"]
seen["apps"] = {app["id"]: app for app in apps}
seen["running_filtered"] = [
    app["id"]
    for app in rm.cluster_applications(
        states=["RUNNING", "ACCEPTED"],
        final_status="UNDEFINED",
        user="anonymous",
        queue="default",
        limit=10,
        started_time_begin=0,
        started_time_end=int(time.time() * 1000) + 60_000,
        application_types=["yarn"],
        de_selects=["resourceRequests"],
    ).data["apps"]["app"]
]
seen["finished_filtered"] = [
    app["id"] for app in rm.cluster_applications(state="FINISHED").data["apps"]["app"]
]
seen["tagged"] = [
    app["id"]
    for app in rm.cluster_applications(application_tags=["nightly"]).data["apps"]["app"]
]
seen["limit_0"] = refused(rm.cluster_applications, limit=0)

seen["statistics"] = rm.cluster_application_statistics().data["appStatInfo"]["statItem"]
seen["statistics_yarn_running"] = rm.cluster_application_statistics(
    states=["RUNNING"], application_types=["YARN"]
).data["appStatInfo"]["statItem"]

seen["running"] = rm.cluster_application(RUNNING).data["app"]
seen["unknown_app"] = refused(rm.cluster_application, "application_1_9999")

attempts = rm.cluster_application_attempts(RUNNING).data["appAttempts"]["appAttempt"]
attempt = attempts[0]["appAttemptId"]
seen["attempt"] = rm.cluster_application_attempt_info(RUNNING, attempt).data["appAttempt"]
containers = rm.cluster_application_attempt_containers(RUNNING, attempt).data["containers"]["container"]
seen["container"] = rm.cluster_application_attempt_container_info(
    RUNNING, attempt, containers[0]["containerId"]
).data["container"]

seen["state_before_kill"] = rm.cluster_application_state(RUNNING).data["state"]

nodes = rm.cluster_nodes().data["nodes"]["node"]
seen["nodes"] = nodes
seen["running_nodes"] = len(rm.cluster_nodes(states=["RUNNING"]).data["nodes"]["node"])
seen["new_nodes"] = len(rm.cluster_nodes(states=["NEW"]).data["nodes"]["node"])
seen["node"] = rm.cluster_node(nodes[0]["id"]).data["node"]
# The client checks node states against application states, so an app
# state reaches the server, which must refuse it.
seen["node_state_accepted"] = refused(rm.cluster_nodes, states=["ACCEPTED"])

seen["queue"] = rm.cluster_get_application_queue(RUNNING).data
seen["priority"] = rm.cluster_get_application_priority(RUNNING).data
seen["timeouts"] = rm.cluster_application_timeouts(RUNNING).data
seen["timeout"] = rm.cluster_application_timeout(RUNNING, "LIFETIME").data
# A lifetime set as the client sends it (YARN's ISO 8601), then read back.
seen["timeout_asked"] = time.strftime(
    "%Y-%m-%dT%H:%M:%S.000+0000", time.gmtime(int(time.time()) + 3600))
seen["timeout_set"] = rm.cluster_update_application_timeout(
    RUNNING, "LIFETIME", seen["timeout_asked"]).data
seen["timeout_after"] = rm.cluster_application_timeout(RUNNING, "LIFETIME").data
seen["reservations"] = rm.cluster_reservations(queue="default").data
seen["scheduler_conf"] = rm.cluster_scheduler_conf_mutation().data
seen["activities"] = rm.scheduler_activities().data
seen["app_activities"] = rm.application_activities(RUNNING).data

seen["kill"] = rm.cluster_application_kill(RUNNING).data
deadline = time.time() + 30
while rm.cluster_application_state(RUNNING).data["state"] != "KILLED":
    assert time.time() < deadline, "the app was not killed within 30 s"
    time.sleep(0.2)
seen["killed"] = rm.cluster_application(RUNNING).data["app"]
seen["kill_again"] = rm.cluster_application_kill(RUNNING).data
seen["kill_finished"] = rm.cluster_application_kill(FINISHED).data

json.dump(seen, sys.stdout)
