// Drives a live Weft over Hadoop RPC with YARN's own client (YarnClient from
// pyspark's hadoop-client-api/runtime 3.4.1, unmodified): every call a YARN
// client makes while submitting and watching an app, and kill. Run with
// `java -cp <jars> ClientCheck.java HOST:PORT COMMAND`; prints what it read
// as `key=value` lines for tests/all/yarn_rpc.rs to check against Weft's
// own REST answers. Exits non-zero on any failure.

import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Set;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.protocolrecords.GetNewApplicationResponse;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptReport;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerReport;
import org.apache.hadoop.yarn.api.records.NodeReport;
import org.apache.hadoop.yarn.api.records.NodeState;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.QueueInfo;
import org.apache.hadoop.yarn.api.records.QueueUserACLInfo;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.exceptions.ApplicationNotFoundException;
import org.apache.hadoop.yarn.exceptions.YarnException;

public class ClientCheck {
    public static void main(String[] args) throws Exception {
        String address = args[0];
        String command = args[1];
        Configuration conf = new YarnConfiguration();
        conf.set(YarnConfiguration.RM_ADDRESS, address);
        // One try per call: a refusal shows at once rather than after retries.
        conf.setInt("yarn.client.failover-max-attempts", 1);
        conf.setLong("yarn.resourcemanager.connect.max-wait.ms", 5000);
        conf.setLong("yarn.resourcemanager.connect.retry-interval.ms", 500);
        YarnClient client = YarnClient.createYarnClient();
        client.init(conf);
        client.start();
        try {
            run(client, command);
        } finally {
            client.stop();
        }
    }

    static void say(String key, Object value) {
        System.out.println(key + "=" + value);
    }

    static void run(YarnClient client, String command) throws Exception {
        say("nodemanagers", client.getYarnClusterMetrics().getNumNodeManagers());
        List<NodeReport> nodes = client.getNodeReports(NodeState.RUNNING);
        say("nodes", nodes.size());
        for (NodeReport node : nodes) {
            say("node.id", node.getNodeId());
            say("node.http", node.getHttpAddress());
            say("node.rack", node.getRackName());
            say("node.capability.memory", node.getCapability().getMemorySize());
            say("node.capability.vcores", node.getCapability().getVirtualCores());
        }
        QueueInfo queue = client.getQueueInfo("default");
        say("queue.name", queue.getQueueName());
        say("queue.capacity", queue.getCapacity());
        say("queue.maximum", queue.getMaximumCapacity());
        say("queue.state", queue.getQueueState());
        for (QueueInfo root : client.getRootQueueInfos()) {
            say("root.child", root.getQueueName());
        }
        for (QueueUserACLInfo acl : client.getQueueAclsInfo()) {
            say("acl." + acl.getQueueName(), acl.getUserAcls());
        }

        YarnClientApplication created = client.createApplication();
        GetNewApplicationResponse fresh = created.getNewApplicationResponse();
        ApplicationId id = fresh.getApplicationId();
        say("app.id", id);
        say("max.memory", fresh.getMaximumResourceCapability().getMemorySize());
        say("max.vcores", fresh.getMaximumResourceCapability().getVirtualCores());

        ApplicationSubmissionContext context = created.getApplicationSubmissionContext();
        context.setApplicationName("rpc-check");
        context.setQueue("default");
        context.setApplicationType("RPC-CHECK");
        context.setApplicationTags(Set.of("project:rpcproj", "check"));
        context.setPriority(Priority.newInstance(3));
        context.setResource(Resource.newInstance(128, 1));
        context.setMaxAppAttempts(1);
        HashMap<String, String> env = new HashMap<>();
        env.put("CHECK_GREETING", "hello");
        context.setAMContainerSpec(ContainerLaunchContext.newInstance(
                Collections.emptyMap(), env, List.of(command), null, null, null));
        client.submitApplication(context);
        say("submitted", id);

        ApplicationReport report = waitFor(client, id,
                EnumSet.of(YarnApplicationState.ACCEPTED, YarnApplicationState.RUNNING,
                        YarnApplicationState.FINISHED, YarnApplicationState.FAILED,
                        YarnApplicationState.KILLED));
        say("report.state", report.getYarnApplicationState());
        say("report.name", report.getName());
        say("report.queue", report.getQueue());
        say("report.user", report.getUser());
        say("report.type", report.getApplicationType());
        say("report.tags", String.join(",", new java.util.TreeSet<>(report.getApplicationTags())));
        say("report.priority", report.getPriority().getPriority());
        say("report.attempt", report.getCurrentApplicationAttemptId());

        // The attempt and, where an agent runs it (CHECK_CONTAINERS set),
        // its master's container.
        List<ApplicationAttemptReport> attempts = client.getApplicationAttempts(id);
        say("attempts", attempts.size());
        ApplicationAttemptReport attempt =
                client.getApplicationAttemptReport(attempts.get(0).getApplicationAttemptId());
        say("attempt.id", attempt.getApplicationAttemptId());
        if (System.getenv("CHECK_CONTAINERS") != null) {
            long deadline = System.currentTimeMillis() + 30_000;
            List<ContainerReport> containers = client.getContainers(attempt.getApplicationAttemptId());
            while (containers.isEmpty() && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
                containers = client.getContainers(attempt.getApplicationAttemptId());
            }
            say("containers", containers.size());
            ContainerReport container = client.getContainerReport(containers.get(0).getContainerId());
            say("container.state", container.getContainerState());
            say("container.is.am", container.getContainerId().equals(
                    client.getApplicationAttemptReport(attempt.getApplicationAttemptId()).getAMContainerId()));
        }

        boolean listed = false;
        for (ApplicationReport app : client.getApplications()) {
            listed |= app.getApplicationId().equals(id);
        }
        say("listed", listed);

        // Asked above the cluster's highest (10 in the test), cut to it.
        say("updated.priority", client.updateApplicationPriority(id, Priority.newInstance(12)).getPriority());
        say("updated.report.priority", client.getApplicationReport(id).getPriority().getPriority());

        // Moved to the queue CHECK_MOVE_TO names and back (`yarn
        // application -movetoqueue`); a queue there is none of is refused.
        String moveTo = System.getenv("CHECK_MOVE_TO");
        if (moveTo != null) {
            String from = client.getApplicationReport(id).getQueue();
            client.moveApplicationAcrossQueues(id, moveTo);
            say("moved.queue", client.getApplicationReport(id).getQueue());
            client.moveApplicationAcrossQueues(id, from);
            say("moved.back", client.getApplicationReport(id).getQueue());
            try {
                client.moveApplicationAcrossQueues(id, "nowhere");
                say("move.unknown", "moved");
            } catch (YarnException e) {
                say("move.unknown", e.getMessage().contains("unknown queue") ? "refused" : e.getMessage());
            }
        }

        client.killApplication(id);
        report = client.getApplicationReport(id);
        say("killed.state", report.getYarnApplicationState());
        say("killed.final", report.getFinalApplicationStatus());

        try {
            client.getApplicationReport(ApplicationId.newInstance(id.getClusterTimestamp(), 999999));
            say("unknown", "found");
        } catch (ApplicationNotFoundException e) {
            say("unknown", "ApplicationNotFoundException");
        }
    }

    static ApplicationReport waitFor(YarnClient client, ApplicationId id,
            Set<YarnApplicationState> states) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            ApplicationReport report = client.getApplicationReport(id);
            if (states.contains(report.getYarnApplicationState())
                    || System.currentTimeMillis() > deadline) {
                return report;
            }
            Thread.sleep(100);
        }
    }
}
