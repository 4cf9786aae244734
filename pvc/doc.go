// Package pvc owns the volumes of builds: the build volume, resource and task caches, their
// clones, and their garbage collection.
//
// # Build volumes and task caches
//
// Concourse keeps a task's caches per job, step name and path: a build's task starts
// from what the job's previous build left. Here the caches live on the build volume
// (caches/<step>/<path>, see runspec), and a job's build volume is a clone of the
// volume of the job's last build that finished cleanly:
//
//   - Prepare, before the PipelineRun is created, makes its build volume, a PVC named
//     ClaimName(run) (in place of the translator's volumeClaimTemplate, BindBuildVolume),
//     with spec.dataSource naming the cache source (CacheSource) when the storage class
//     can clone (a CSI driver's, or AnnotationClone=true; a clone that fails at once is
//     replaced by an empty volume). Otherwise the volume starts empty and a warning says
//     why. Own, once the run is created, makes the run the volume's owner.
//   - The runner's verdict, once it recorded the build's outcome, deletes everything on
//     the volume but caches/ (plan IDs repeat across builds: no stale state may reach a
//     clone). Until it is done, and if it fails, the verdict has an `error` result. A
//     build's last step that holds the verdict (runspec.LabelVerdict) records it with
//     `verdict` and `verdict-error` results when the build succeeded; else the verdict
//     task does, as for any build.
//   - A cache source is a bound build volume of the job (full team, pipeline and job
//     names, from annotations) and of the same storage class and volume mode, whose run
//     was neither cancelled nor aborted (AnnotationAborted) and whose verdict TaskRun
//     finished with an outcome and no error (the verdict task's, else the last step's
//     that holds the verdict); the newest by the verdict's completion wins, whatever the
//     build's outcome (Concourse saves caches whatever a task's exit status).
//   - Volumes says which may go, and why (Garbage: their names); package gc deletes
//     them: every build volume but, per job, the newest cache source, those of builds
//     still running, and anything that changed within Grace. A recent cache source whose
//     build gc deletes is released from it first (AnnotationReleased) and stays for
//     Grace: a build being prepared may have just chosen it.
//   - A one-off build's volume (runspec.AnnotationOneOff) is no job's: the verdict keeps
//     it whole, for its starter to download the build's outputs from, it is never a
//     cache source, and it is garbage once its run has been over for Grace.
//
// The pure functions (ClaimName, Request, BuildClaim, BindBuildVolume, OwnerReference,
// CacheSource, Volumes, Garbage) do no I/O; Prepare and Own are the shell over the
// Kubernetes and Tekton clients.
package pvc
