package pvc

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Annotations that make a StorageClass the default one.
var defaultClassAnnotations = []string{
	"storageclass.kubernetes.io/is-default-class",
	"storageclass.beta.kubernetes.io/is-default-class",
}

// defaultClass is the class a claim that names none gets: the newest default one, as
// Kubernetes picks it when there are several; nil when there is none.
func defaultClass(classes []storagev1.StorageClass) *storagev1.StorageClass {
	var defaults []*storagev1.StorageClass
	for i := range classes {
		for _, a := range defaultClassAnnotations {
			if classes[i].Annotations[a] == "true" {
				defaults = append(defaults, &classes[i])
				break
			}
		}
	}
	if len(defaults) == 0 {
		return nil
	}
	return slices.MinFunc(defaults, func(a, b *storagev1.StorageClass) int {
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// canClone says whether the volumes of a storage class can be cloned with a dataSource,
// given whether its provisioner is a CSI driver (a CSIDriver object has its name), and
// if not, why, in a sentence that says how to change it. AnnotationClone decides when
// set: a CSI driver need not support clones, and other provisioners may.
func canClone(sc *storagev1.StorageClass, csi bool) (bool, string) {
	switch sc.Annotations[AnnotationClone] {
	case "true":
		return true, ""
	case "false":
		return false, fmt.Sprintf("storage class %s is annotated %s=false, so its volumes are not cloned", sc.Name, AnnotationClone)
	}
	if !csi {
		return false, fmt.Sprintf("storage class %s (provisioner %s) has no CSI driver, so its volumes cannot be cloned; if they can, annotate it %s=true", sc.Name, sc.Provisioner, AnnotationClone)
	}
	return true, ""
}

// atLeast is size, or the source's size if it is larger: a clone must be at least as
// large as its source, or its provisioning fails for ever.
func atLeast(size resource.Quantity, source *corev1.PersistentVolumeClaim) resource.Quantity {
	out := size
	for _, q := range []resource.Quantity{source.Spec.Resources.Requests[corev1.ResourceStorage], source.Status.Capacity[corev1.ResourceStorage]} {
		if q.Cmp(out) > 0 {
			out = q
		}
	}
	return out
}
