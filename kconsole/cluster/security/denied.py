"""A refusal by the cluster's authorizer (ACLs), said as what it is: which operation on which
resource was denied, to whom.

Kafka answers a request its authorizer denies with one of the *_AUTHORIZATION_FAILED errors,
which name only the kind of resource. Which operation the request needed is Kafka's own table
("Operations and Resources on Protocols" in Kafka's authorization docs); the requests kconsole
sends are listed in NEEDS, so the message can say "User:reader may not ALTER the cluster (elect
leaders)" rather than a bare error code.
"""

from __future__ import annotations

from kconsole.cluster.security import translate as security
from kconsole.config import Settings
from kconsole.errors import AuthorizationDenied

# Kafka's authorization errors -> the kind of resource they are about.
AUTHORIZATION_ERRORS = {
    "TOPIC_AUTHORIZATION_FAILED": "topic",
    "GROUP_AUTHORIZATION_FAILED": "group",
    "CLUSTER_AUTHORIZATION_FAILED": "cluster",
    "TRANSACTIONAL_ID_AUTHORIZATION_FAILED": "transactional id",
    "DELEGATION_TOKEN_AUTHORIZATION_FAILED": "delegation token",
}
# kafka-python names the same errors as classes.
_CLASS_NAMES = {
    "TopicAuthorizationFailedError": "TOPIC_AUTHORIZATION_FAILED",
    "GroupAuthorizationFailedError": "GROUP_AUTHORIZATION_FAILED",
    "ClusterAuthorizationFailedError": "CLUSTER_AUTHORIZATION_FAILED",
    "TransactionalIdAuthorizationFailedError": "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
    "DelegationTokenAuthorizationFailedError": "DELEGATION_TOKEN_AUTHORIZATION_FAILED",
}
# librdkafka's descriptions of them (a fatal error's text holds the description, not the name:
# "Fatal error: Broker: Cluster authorization failed: Failed to acquire idempotence PID ...").
_DESCRIPTIONS = {
    "Broker: Topic authorization failed": "TOPIC_AUTHORIZATION_FAILED",
    "Broker: Group authorization failed": "GROUP_AUTHORIZATION_FAILED",
    "Broker: Cluster authorization failed": "CLUSTER_AUTHORIZATION_FAILED",
    "Broker: Transactional Id authorization failed": "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
}

# What each request kconsole sends needs: (operation, resource kind, what it is for).
NEEDS = {
    "Produce": ("WRITE", "topic", "produce"),
    "InitProducerId": ("IDEMPOTENT_WRITE", "cluster", "an idempotent producer's id"),
    "Fetch": ("READ", "topic", "consume"),
    "JoinGroup": ("READ", "group", "join the consumer group"),
    "OffsetCommit": ("READ", "group", "commit offsets"),
    "OffsetFetch": ("DESCRIBE", "group", "read committed offsets"),
    "DescribeGroups": ("DESCRIBE", "group", "describe the group"),
    "AlterPartitionReassignments": ("ALTER", "cluster", "reassign partitions"),
    "ListPartitionReassignments": ("DESCRIBE", "cluster", "list partition reassignments"),
    "ElectLeaders": ("ALTER", "cluster", "elect leaders"),
    "DescribeConfigs": ("DESCRIBE_CONFIGS", "topic", "read configs"),
    "AlterConfigs": ("ALTER_CONFIGS", "topic", "change configs (throttles)"),
    "DescribeLogDirs": ("DESCRIBE", "cluster", "read log dir sizes"),
    "CreateTopics": ("CREATE", "topic", "create the topic"),
}


def authorization_error(text: object) -> str | None:
    """Kafka's name of the authorization error in `text` (an error's name, kafka-python's
    class name, librdkafka's description, or a message holding one); None when it is not
    one."""
    said = str(text)
    for name in AUTHORIZATION_ERRORS:
        if name in said:
            return name
    for known in (_CLASS_NAMES, _DESCRIPTIONS):
        for text_of, name in known.items():
            if text_of in said:
                return name
    return None


def denied(
    error: str, request: str, resource: str = "", principal: str | None = None
) -> AuthorizationDenied:
    """The refusal of `request` (a name in NEEDS) on `resource` (a topic's or group's name; ""
    for the cluster or unknown), as AuthorizationDenied: 'denied by the cluster's ACLs: User:x
    may not WRITE topic t (produce; TOPIC_AUTHORIZATION_FAILED)'. `principal` None: "this
    client"."""
    who = (principal or "this client").split(" (", 1)[0]
    op, kind, purpose = NEEDS.get(request, ("?", AUTHORIZATION_ERRORS.get(error, "?"), request))
    kind = AUTHORIZATION_ERRORS.get(error, kind)
    if kind == "cluster":
        what = "the cluster"
    elif resource:
        what = f"{kind} {resource}"
    else:
        what = f"the {kind}"
    return AuthorizationDenied(
        f"denied by the cluster's ACLs: {who} may not {op} {what} ({purpose}; {error})"
    )


def denied_to(
    settings: Settings, error: str, request: str, resource: str = ""
) -> AuthorizationDenied:
    """denied(), to the principal the cluster knows `settings` as (worked out only now, when
    there is a refusal to say)."""
    who = security.principal(settings.kafka_config(), settings.client_origin)
    return denied(error, request, resource, principal=who)
