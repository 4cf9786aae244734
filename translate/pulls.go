package translate

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	v1 "github.com/tektoncd/pipeline/pkg/apis/pipeline/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/vars"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// ImagePull is the credentials of a registry that serves images of a build's steps: the
// username and password of the registry-image (or docker-image) source of a task's
// image_resource, of a custom resource type's image, or of a get whose artifact a task
// runs as its image (`image:`), as the pipeline writes them, ((vars)) and all.
// Concourse's registry-image resource fetches the image with them; here the node pulls
// it, with the build's Secret of image pull credentials (Result.ImagePullSecret), which
// the build's starter fills in from them.
type ImagePull struct {
	// Repository is the image's repository, as written: PullRegistry, once its ((vars))
	// are resolved, keys the credentials in the Secret's Docker config.
	Repository string
	// Username and Password are the source's, as written.
	Username, Password string
}

// DockerHubRegistry is the key of Docker Hub's credentials in a Docker config: the
// kubelet gives them to every image of Docker Hub, whatever its repository.
const DockerHubRegistry = "https://index.docker.io/v1/"

// registryImage is imageFromResource, noting the credentials the image's source gives for
// its registry: the pods that run the image pull it with them (imagePulls).
func (c *compiler) registryImage(typ string, source concourse.Source, version concourse.Version) (string, string) {
	img, reason := imageFromResource(typ, source, version)
	if reason == "" {
		c.notePull(img, source)
	}
	return img, reason
}

// notePull notes the credentials of a registry image's source, if it gives any, for the
// pods whose image param is image: a reference, or the result of the get that fetches
// it.
func (c *compiler) notePull(image string, source concourse.Source) {
	user, _ := source["username"].(string)
	pass, _ := source["password"].(string)
	if user == "" && pass == "" {
		return
	}
	if _, seen := c.pulls[image]; !seen {
		repo, _ := source["repository"].(string)
		c.pulls[image] = ImagePull{Repository: repo, Username: user, Password: pass}
	}
}

// PullRegistry is the Docker config key of an image repository's credentials: the
// repository itself, which the kubelet matches as a prefix of the images it pulls, or
// DockerHubRegistry for Docker Hub, whose images the kubelet matches by host alone.
func PullRegistry(repo string) string {
	host, _, found := strings.Cut(repo, "/")
	if !found || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return DockerHubRegistry
	}
	switch host {
	case "docker.io", "index.docker.io", "registry-1.docker.io":
		return DockerHubRegistry
	}
	return repo
}

// imagePulls gives each of the build's pods that pulls an image with credentials
// (notePull), or whose image a task file read at run time names (runtimePulls), the
// build's Secret of them, and returns the credentials, each once, sorted, and whether a
// pod names the Secret. The refs of their ((vars)) are recorded with the build's other
// credentials (Result.Credentials), to be looked up as theirs are, though no step reads
// them.
func (c *compiler) imagePulls(secret string, taskLists ...[]v1.PipelineTask) ([]ImagePull, bool) {
	if len(c.pulls) == 0 && len(c.runtimePulls) == 0 {
		return nil, false
	}
	named := false
	used := map[ImagePull]bool{}
	for _, tasks := range taskLists {
		for _, pt := range tasks {
			img := ""
			for _, p := range pt.Params {
				if p.Name == runspec.ParamImage {
					img = p.Value.StringVal
				}
			}
			pull, ok := c.pulls[img]
			if !ok && !c.runtimePulls[img] {
				continue
			}
			if ok {
				used[pull] = true
			}
			named = true
			c.podTemplate(pt.Name).ImagePullSecrets = []corev1.LocalObjectReference{{Name: secret}}
		}
	}
	out := slices.SortedFunc(maps.Keys(used), func(a, b ImagePull) int {
		return cmp.Or(cmp.Compare(a.Repository, b.Repository), cmp.Compare(a.Username, b.Username), cmp.Compare(a.Password, b.Password))
	})
	var refs []vars.Reference
	for _, pull := range out {
		for _, s := range []string{pull.Repository, pull.Username, pull.Password} {
			refs = append(refs, refsOf(s)...)
		}
	}
	if c.opts.SuppliedCredentials {
		c.suppliedKeys(refs)
	} else {
		c.secretsOf(refs)
	}
	return out, named
}

// imagePullSecret is the build's Secret of image pull credentials without its data, as
// Result.ImagePullSecret.
func imagePullSecret(name string, labels, annotations map[string]string) *corev1.Secret {
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Type:       corev1.SecretTypeDockerConfigJson,
	}
}
