//! The table printers of the kinds policies target beyond workloads:
//! the columns after Name that kube-apiserver v1.36 gives Ingresses,
//! IngressClasses, NetworkPolicies, HorizontalPodAutoscalers, Jobs,
//! CronJobs, EndpointSlices, PersistentVolumeClaims, ResourceQuotas,
//! StorageClasses, PriorityClasses, ValidatingAdmissionPolicies and their
//! bindings (names, types, priorities and descriptions as its Table
//! output has them). LimitRanges have no printer there: they get the
//! default Name / Created At table, as here.
//!
//! Owns: these types' column lists. Must not touch: the cells
//! (`policy_cells`) or the Table shape.

use super::policy_cells::*;
use super::printers::{AGE, CONTAINERS, IMAGES, Printer};

const JOB_SELECTOR: (&str, &str, i64, &str) = (
    "Selector",
    "string",
    1,
    "A label query over pods that should match the pod count. Normally, the system sets this field for \
     you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
);

pub static PRINTERS: &[Printer] = &[
    Printer {
        group: "networking.k8s.io",
        plural: "ingresses",
        columns: &[
            (
                "Class",
                "string",
                0,
                "The name of the IngressClass resource that should be used for additional configuration",
            ),
            (
                "Hosts",
                "string",
                0,
                "Hosts that incoming requests are matched against before the ingress rule",
            ),
            (
                "Address",
                "string",
                0,
                "Address is a list containing ingress points for the load-balancer",
            ),
            ("Ports", "string", 0, "Ports of TLS configurations that open"),
            AGE,
        ],
        cells: ingress_cells,
    },
    Printer {
        group: "networking.k8s.io",
        plural: "ingressclasses",
        columns: &[
            (
                "Controller",
                "string",
                0,
                "Controller that is responsible for handling this class",
            ),
            (
                "Parameters",
                "string",
                0,
                "A reference to a resource with additional parameters",
            ),
            AGE,
        ],
        cells: ingress_class_cells,
    },
    Printer {
        group: "networking.k8s.io",
        plural: "networkpolicies",
        columns: &[
            (
                "Pod-Selector",
                "string",
                0,
                "podSelector selects the pods to which this NetworkPolicy object applies. The array of rules is applied to any pods selected by this field. An empty selector matches all pods in the policy's namespace. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is optional. If it is not specified, it defaults to an empty selector.",
            ),
            AGE,
        ],
        cells: network_policy_cells,
    },
    Printer {
        group: "autoscaling",
        plural: "horizontalpodautoscalers",
        columns: &[
            (
                "Reference",
                "string",
                0,
                "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count.",
            ),
            (
                "Targets",
                "string",
                0,
                "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond. If not set, the default metric will be set to 80% average CPU utilization.",
            ),
            (
                "MinPods",
                "string",
                0,
                "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available.",
            ),
            (
                "MaxPods",
                "string",
                0,
                "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas.",
            ),
            (
                "Replicas",
                "string",
                0,
                "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler.",
            ),
            AGE,
        ],
        cells: hpa_cells,
    },
    Printer {
        group: "batch",
        plural: "jobs",
        columns: &[
            ("Status", "string", 0, "Status of the job."),
            (
                "Completions",
                "string",
                0,
                "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs.",
            ),
            ("Duration", "string", 0, "Time required to complete the job."),
            AGE,
            CONTAINERS,
            IMAGES,
            JOB_SELECTOR,
        ],
        cells: job_cells,
    },
    Printer {
        group: "batch",
        plural: "cronjobs",
        columns: &[
            (
                "Schedule",
                "string",
                0,
                "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
            ),
            (
                "Timezone",
                "string",
                0,
                "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
            ),
            (
                "Suspend",
                "boolean",
                0,
                "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
            ),
            (
                "Active",
                "integer",
                0,
                "A list of pointers to currently running jobs.",
            ),
            (
                "Last Schedule",
                "string",
                0,
                "Information when was the last time the job was successfully scheduled.",
            ),
            AGE,
            CONTAINERS,
            IMAGES,
            JOB_SELECTOR,
        ],
        cells: cronjob_cells,
    },
    Printer {
        group: "discovery.k8s.io",
        plural: "endpointslices",
        columns: &[
            (
                "AddressType",
                "string",
                0,
                "addressType specifies the type of address carried by this EndpointSlice. All addresses in this slice must be the same type. This field is immutable after creation. The following address types are currently supported: * IPv4: Represents an IPv4 Address. * IPv6: Represents an IPv6 Address. * FQDN: Represents a Fully Qualified Domain Name. (Deprecated) The EndpointSlice controller only generates, and kube-proxy only processes, slices of addressType \"IPv4\" and \"IPv6\". No semantics are defined for the \"FQDN\" type.",
            ),
            (
                "Ports",
                "string",
                0,
                "ports specifies the list of network ports exposed by each endpoint in this slice. Each port must have a unique name. Each slice may include a maximum of 100 ports. Services always have at least 1 port, so EndpointSlices generated by the EndpointSlice controller will likewise always have at least 1 port. EndpointSlices used for other purposes may have an empty ports list.",
            ),
            (
                "Endpoints",
                "string",
                0,
                "endpoints is a list of unique endpoints in this slice. Each slice may include a maximum of 1000 endpoints.",
            ),
            AGE,
        ],
        cells: endpoint_slice_cells,
    },
    Printer {
        group: "",
        plural: "persistentvolumeclaims",
        columns: &[
            (
                "Status",
                "string",
                0,
                "phase represents the current phase of PersistentVolumeClaim.",
            ),
            (
                "Volume",
                "string",
                0,
                "volumeName is the binding reference to the PersistentVolume backing this claim.",
            ),
            (
                "Capacity",
                "string",
                0,
                "capacity represents the actual resources of the underlying volume.",
            ),
            (
                "Access Modes",
                "string",
                0,
                "accessModes contains the actual access modes the volume backing the PVC has. More info: https://kubernetes.io/docs/concepts/storage/persistent-volumes#access-modes-1",
            ),
            ("StorageClass", "string", 0, "StorageClass of the pvc"),
            (
                "VolumeAttributesClass",
                "string",
                0,
                "VolumeAttributesClass of the pvc",
            ),
            AGE,
            (
                "VolumeMode",
                "string",
                1,
                "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.",
            ),
        ],
        cells: pvc_cells,
    },
    Printer {
        group: "",
        plural: "resourcequotas",
        columns: &[
            (
                "Request",
                "string",
                0,
                "Request represents a minimum amount of cpu/memory that a container may consume.",
            ),
            (
                "Limit",
                "string",
                0,
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            ),
            AGE,
        ],
        cells: resource_quota_cells,
    },
    Printer {
        group: "storage.k8s.io",
        plural: "storageclasses",
        columns: &[
            (
                "Provisioner",
                "string",
                0,
                "provisioner indicates the type of the provisioner.",
            ),
            (
                "ReclaimPolicy",
                "string",
                0,
                "reclaimPolicy controls the reclaimPolicy for dynamically provisioned PersistentVolumes of this storage class. Defaults to Delete.",
            ),
            (
                "VolumeBindingMode",
                "string",
                0,
                "volumeBindingMode indicates how PersistentVolumeClaims should be provisioned and bound.  When unset, VolumeBindingImmediate is used. This field is only honored by servers that enable the VolumeScheduling feature.",
            ),
            (
                "AllowVolumeExpansion",
                "string",
                0,
                "allowVolumeExpansion shows whether the storage class allow volume expand.",
            ),
            AGE,
        ],
        cells: storage_class_cells,
    },
    Printer {
        group: "scheduling.k8s.io",
        plural: "priorityclasses",
        columns: &[
            (
                "Value",
                "integer",
                0,
                "value represents the integer value of this priority class. This is the actual priority that pods receive when they have the name of this class in their pod spec.",
            ),
            (
                "Global-Default",
                "boolean",
                0,
                "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class. Only one PriorityClass can be marked as `globalDefault`. However, if more than one PriorityClasses exists with their `globalDefault` field set to true, the smallest value of such global default PriorityClasses will be used as the default priority.",
            ),
            AGE,
            (
                "PreemptionPolicy",
                "string",
                0,
                "preemptionPolicy is the Policy for preempting pods with lower priority. One of Never, PreemptLowerPriority. Defaults to PreemptLowerPriority if unset.",
            ),
        ],
        cells: priority_class_cells,
    },
    Printer {
        group: "admissionregistration.k8s.io",
        plural: "validatingadmissionpolicies",
        columns: &[
            (
                "Validations",
                "integer",
                0,
                "Validations indicates the number of validation rules defined in this configuration",
            ),
            (
                "ParamKind",
                "string",
                0,
                "ParamKind specifies the kind of resources used to parameterize this policy",
            ),
            AGE,
        ],
        cells: admission_policy_cells,
    },
    Printer {
        group: "admissionregistration.k8s.io",
        plural: "validatingadmissionpolicybindings",
        columns: &[
            (
                "PolicyName",
                "string",
                0,
                "PolicyName indicates the policy definition which the policy binding binded to",
            ),
            (
                "ParamRef",
                "string",
                0,
                "ParamRef indicates the param resource which sets the configuration param",
            ),
            AGE,
        ],
        cells: admission_policy_binding_cells,
    },
];
