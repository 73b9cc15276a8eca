#!/usr/bin/env python3
"""Checks every Pod template of the given Kubernetes manifests against the Pod Security Standards' "restricted"
profile, as the PodSecurity admission controller (pod-security.kubernetes.io/enforce: restricted, version latest)
judges it: https://kubernetes.io/docs/concepts/security/pod-security-standards/ (the baseline controls, then the
restricted ones). Also Gatehouse's own rule: its container runs on a read-only root file system.

    python3 deploy/pod-security.py deploy/kubernetes/*.yaml deploy/istio/gatehouse.yaml

Prints one line per Pod template checked; exits 1 naming every violation (manifest, workload, container, field).
Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs (spec.template), CronJobs (spec.jobTemplate.spec.template)
and bare Pods are read; other kinds are skipped.
"""

import sys

import yaml

BASELINE_CAPABILITIES = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                         "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}
RESTRICTED_VOLUMES = {"configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected",
                      "secret"}
SAFE_SYSCTLS = {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
                "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
                "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
                "net.ipv4.tcp_keepalive_probes"}
SELINUX_TYPES = {"", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"}


def pod_spec(document):
    kind = document.get("kind")
    spec = document.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "ReplicationController"):
        return (spec.get("template") or {}).get("spec")
    if kind == "CronJob":
        return ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template", {}).get("spec")
    return None


def violations(spec):
    found = []
    pod = spec.get("securityContext") or {}
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field):
            found.append(f"spec.{field} must be false")
    for volume in spec.get("volumes") or []:
        kinds = set(volume) - {"name"}
        if not kinds <= RESTRICTED_VOLUMES:
            found.append(f"volume {volume.get('name')}: {sorted(kinds - RESTRICTED_VOLUMES)} not allowed (restricted volume types)")
    for sysctl in pod.get("sysctls") or []:
        if sysctl.get("name") not in SAFE_SYSCTLS:
            found.append(f"securityContext.sysctls: {sysctl.get('name')} is not a safe sysctl")
    if pod.get("runAsUser") == 0:
        found.append("securityContext.runAsUser must not be 0")
    found += selinux("securityContext", pod)
    pod_seccomp = (pod.get("seccompProfile") or {}).get("type")
    if pod_seccomp not in (None, "RuntimeDefault", "Localhost"):
        found.append(f"securityContext.seccompProfile.type {pod_seccomp} (RuntimeDefault or Localhost)")
    containers = [(c, "containers") for c in spec.get("containers") or []]
    containers += [(c, "initContainers") for c in spec.get("initContainers") or []]
    containers += [(c, "ephemeralContainers") for c in spec.get("ephemeralContainers") or []]
    for container, group in containers:
        where = f"{group}[{container.get('name')}]"
        context = container.get("securityContext") or {}
        if context.get("privileged"):
            found.append(f"{where}: privileged")
        if context.get("allowPrivilegeEscalation") is not False:
            found.append(f"{where}: securityContext.allowPrivilegeEscalation must be false")
        if context.get("runAsNonRoot", pod.get("runAsNonRoot")) is not True:
            found.append(f"{where}: runAsNonRoot must be true (the container's or the pod's securityContext)")
        if context.get("runAsUser") == 0:
            found.append(f"{where}: runAsUser must not be 0")
        seccomp = (context.get("seccompProfile") or {}).get("type", pod_seccomp)
        if seccomp not in ("RuntimeDefault", "Localhost"):
            found.append(f"{where}: seccompProfile.type must be RuntimeDefault or Localhost (the container's or the pod's)")
        capabilities = context.get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            found.append(f"{where}: capabilities.drop must include ALL")
        added = set(capabilities.get("add") or [])
        if added - {"NET_BIND_SERVICE"}:
            found.append(f"{where}: capabilities.add may hold only NET_BIND_SERVICE, not {sorted(added - {'NET_BIND_SERVICE'})}")
        if context.get("procMount", "Default") != "Default":
            found.append(f"{where}: procMount must be Default")
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                found.append(f"{where}: hostPort {port['hostPort']}")
        found += selinux(f"{where}: securityContext", context)
        if container.get("name") == "gatehouse" and context.get("readOnlyRootFilesystem") is not True:
            found.append(f"{where}: Gatehouse runs on a read-only root file system (readOnlyRootFilesystem: true)")
    return found


def selinux(where, context):
    options = context.get("seLinuxOptions") or {}
    found = []
    if options.get("type", "") not in SELINUX_TYPES:
        found.append(f"{where}.seLinuxOptions.type {options['type']}")
    for field in ("user", "role"):
        if options.get(field):
            found.append(f"{where}.seLinuxOptions.{field} must be unset")
    return found


def main(paths):
    failures = 0
    checked = 0
    for path in paths:
        for document in yaml.safe_load_all(open(path)):
            if not isinstance(document, dict):
                continue
            spec = pod_spec(document)
            if spec is None:
                continue
            checked += 1
            name = f"{path}: {document.get('kind')} {(document.get('metadata') or {}).get('name')}"
            found = violations(spec)
            if found:
                failures += len(found)
                for violation in found:
                    print(f"FAIL {name}: {violation}")
            else:
                print(f"ok   {name}: restricted")
    if checked == 0:
        print("no Pod template found")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
