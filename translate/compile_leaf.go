package translate

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/concourse-tekton/concourse-tekton/concourse"
	"github.com/concourse-tekton/concourse-tekton/concourse/event"
	"github.com/concourse-tekton/concourse-tekton/concourse/planner"
	"github.com/concourse-tekton/concourse-tekton/runspec"
)

// The leaf steps: each is one PipelineTask running the step runner, with what must run
// before it (prepared): a resolve task for a task whose config or image is only known at
// run time, a publish task for a task that runs an artifact, the check, get and publish
// of an image fetched when the build runs, and a check for a get with no version.

func (c *compiler) loadVar(p *concourse.Plan, e cond, sc scope) *handle {
	lv := p.LoadVar
	spec := c.spec(runspec.ModeLoadVar, p.ID, lv.Name, sc)
	spec.LoadVar = &runspec.LoadVar{File: lv.File, Format: lv.Format, Reveal: lv.Reveal}
	return c.leaf(spec, c.opts.RunnerImage, taskVariant{}, nil, e)
}

// run is a prototype's run step, which Concourse 7 has not implemented (exec.RunStep): it
// says so and succeeds, on no worker.
func (c *compiler) run(p *concourse.Plan, e cond, sc scope) *handle {
	spec := c.spec(runspec.ModeRun, p.ID, p.Run.Message, sc)
	spec.Run = &runspec.Run{Message: p.Run.Message, Type: p.Run.Type}
	return c.leaf(spec, c.opts.RunnerImage, taskVariant{}, nil, e)
}

func (c *compiler) setPipeline(p *concourse.Plan, e cond, sc scope) *handle {
	sp := p.SetPipeline
	spec := c.spec(runspec.ModeSetPipeline, p.ID, sp.Name, sc)
	spec.SetPipeline = &runspec.SetPipeline{File: sp.File, Team: sp.Team, Vars: sp.Vars, VarFiles: sp.VarFiles, InstanceVars: sp.InstanceVars}
	return c.leaf(spec, c.opts.RunnerImage, taskVariant{}, nil, e)
}

// resourceImage is the image of a resource step: its custom type's image, or the base
// type's. A type's image that is not a registry image known when the pipeline is
// converted (another type's fetch, a ((var)) left for run time) is fetched when the build
// runs, as Concourse fetches it: the steps returned run first, entered with e, and the
// image names their result.
func (c *compiler) resourceImage(p *concourse.Plan, step, typ string, ti concourse.TypeImage, e cond, sc scope) (string, []*handle, bool) {
	if ti.GetPlan != nil && ti.GetPlan.Get != nil {
		g := ti.GetPlan.Get
		var version concourse.Version
		if g.Version != nil {
			version = *g.Version
		}
		img, reason := c.registryImage(g.Type, g.Source, version)
		if reason == "" {
			return img, nil, true
		}
		if c.mirrorChain(ti) != nil {
			// Concourse's test resource as a type's image: the mock resource's own image,
			// which the step's runner fetches for its metadata (mirroredTypeImage).
			return c.opts.ResourceImages["mock"], nil, true
		}
		if repo, _ := g.Source["repository"].(string); repo == "" && runspec.RegistryImageType(g.Type) {
			c.fail(p, step, "the image of resource type %q cannot be run here: %s", typ, reason)
			return "", nil, false
		}
		return c.fetchImage(p, ti.CheckPlan, ti.GetPlan, e, sc)
	}
	base := ti.BaseType
	if base == "" {
		base = typ
	}
	if img, ok := c.opts.ResourceImages[base]; ok {
		return img, nil, true
	}
	// As on Concourse workers that lack the type: the pipeline is accepted, and the step
	// errors when it runs.
	c.warn(p, step, "no image is known for the resource type %q: the step errors when the build runs (%s), as on workers without the type; give its image with --resource-image %s=IMAGE", base, baseTypeNotFound(base), base)
	return "", nil, true
}

// pulledImage is the fetch of the image of a resource step's custom type that the node
// pulls as the step's image (resourceImage), for the step's events; nil for a base type,
// and an image fetched or mirrored otherwise.
func pulledImage(ti concourse.TypeImage) *runspec.PulledImage {
	if ti.GetPlan == nil || ti.GetPlan.Get == nil {
		return nil
	}
	g := ti.GetPlan.Get
	var version concourse.Version
	if g.Version != nil {
		version = *g.Version
	}
	if _, reason := imageFromResource(g.Type, g.Source, version); reason != "" {
		return nil
	}
	p := &runspec.PulledImage{Name: g.Name, GetID: string(ti.GetPlan.ID)}
	if ti.CheckPlan != nil {
		p.CheckID = string(ti.CheckPlan.ID)
	}
	return p
}

// PulledTaskImage is the fetch of a task's image_resource that the node pulls (a registry
// image), as Concourse plans it when the task runs (planner.FetchImagePlan): the IDs of
// its check (none when its version is pinned) and get, its pinned version, and the public
// plans its image-check and image-get events carry. The compiler records it in the task's
// spec; the mapper makes it of the config a task's resolve step read from a file, the
// one config the compiler cannot know.
func PulledTaskImage(taskID concourse.PlanID, image concourse.ImageResource, types []concourse.ResourceType, tags concourse.Tags, skipInterval bool) (*runspec.PulledImage, error) {
	get, check := planner.FetchImagePlan(taskID, image, types, tags, skipInterval)
	p := &runspec.PulledImage{Name: get.Get.Name, GetID: string(get.ID)}
	if get.Get.Version != nil {
		p.Version = *get.Get.Version
	}
	var err error
	if check != nil {
		p.CheckID = string(check.ID)
		if p.CheckPlan, err = event.Public(*check); err != nil {
			return nil, err
		}
	}
	if p.GetPlan, err = event.Public(get); err != nil {
		return nil, err
	}
	return p, nil
}

// baseTypeNotFound is Concourse's error for a step of a base type no worker has.
func baseTypeNotFound(typ string) string {
	return "base resource type not found: " + typ
}

// unavailable is a resource step whose base type has no known image: it runs nothing
// but the runner, which ends it errored with Concourse's error.
func (c *compiler) unavailable(spec runspec.Spec, typ string, ti concourse.TypeImage, tags concourse.Tags, e cond) *handle {
	base := ti.BaseType
	if base == "" {
		base = typ
	}
	spec.Error = baseTypeNotFound(base)
	return c.leaf(spec, c.opts.RunnerImage, taskVariant{}, tags, e)
}

// fetchImage compiles the fetch of an image when the build runs, for step p: a check
// (unless its version is pinned), a get, and, unless the get is of a registry image
// (whose result names it), the publishing of what it fetched to the build's image
// registry. It returns the image reference (a result) and the steps, the first entered
// with e. The fetch runs in a scope of its own: Concourse keeps an image out of the
// build's artifacts and vars.
func (c *compiler) fetchImage(p, checkPlan, getPlan *concourse.Plan, e cond, sc scope) (string, []*handle, bool) {
	isc := sc
	isc.scope = append(slices.Clone(sc.scope), "image:"+string(getPlan.ID))
	var before []*handle
	if checkPlan != nil {
		before = append(before, c.check(checkPlan, e, isc))
	}
	get := c.get(getPlan, c.after(before, e), isc)
	if get.step == "" {
		return "", nil, false // the fetch's own image could not be found; the compiler failed
	}
	before = append(before, get)
	if g := getPlan.Get; runspec.RegistryImageType(g.Type) {
		img := "$(tasks." + get.step + ".results.image)"
		c.notePull(img, g.Source)
		return img, before, true
	}
	pub := c.publish(p, getPlan.Get.Name, c.after(before, e), isc)
	return "$(tasks." + pub.step + ".results.image)", append(before, pub), true
}

// typeRunsMock tells whether the resource type name, among the pipeline's types, runs the
// mock resource's scripts: the base type mock, or a custom type whose image is a get with
// mirror_self of such a type (a custom type shadows a base type of its name, as in
// Concourse). Chains longer than the pipeline's types are cycles: no.
func typeRunsMock(name string, types []concourse.ResourceType, depth int) bool {
	if depth > len(types) {
		return false
	}
	for _, rt := range types {
		if rt.Name == name {
			mirror, _ := rt.Source["mirror_self"].(bool)
			if rt.Type == rt.Name {
				// A type of its own name's type is the base type of that name.
				return mirror && rt.Type == "mock"
			}
			return mirror && typeRunsMock(rt.Type, types, depth+1)
		}
	}
	return name == "mock"
}

// runsMock tells a resource type whose scripts are the mock resource's: mock itself, or
// a custom type whose image a get of such a type fetches with mirror_self (the mock
// resource's own image), however deep the chain.
func runsMock(typ string, ti concourse.TypeImage) bool {
	if ti.GetPlan == nil || ti.GetPlan.Get == nil {
		return typ == "mock"
	}
	g := ti.GetPlan.Get
	mirror, _ := g.Source["mirror_self"].(bool)
	return mirror && runsMock(g.Type, g.TypeImage)
}

// mirrorChain is the chain of fetches that makes a type's image when it is the mock
// resource fetching itself (the image resourceImage runs as the mock's own), innermost
// first; none for any other image.
func (c *compiler) mirrorChain(ti concourse.TypeImage) []runspec.ImageFetch {
	if ti.GetPlan == nil || ti.GetPlan.Get == nil {
		return nil
	}
	g := ti.GetPlan.Get
	if mirror, _ := g.Source["mirror_self"].(bool); !mirror || !runsMock(g.Type, g.TypeImage) {
		return nil
	}
	if _, ok := c.opts.ResourceImages["mock"]; !ok {
		return nil
	}
	return append(c.mirrorChain(g.TypeImage), imageFetch(g))
}

// mirroredTypeImage is the image of a resource step of a type whose image is the mock
// resource fetching itself, for its runner to fetch (nil: any other image).
func (c *compiler) mirroredTypeImage(ti concourse.TypeImage) *runspec.MirroredImage {
	if chain := c.mirrorChain(ti); chain != nil {
		return &runspec.MirroredImage{Fetches: chain}
	}
	return nil
}

// imageFetch is the fetch of an image by its get.
func imageFetch(g *concourse.GetPlan) runspec.ImageFetch {
	f := runspec.ImageFetch{Source: g.Source, Params: g.Params}
	if g.Version != nil {
		f.Version = *g.Version
	}
	return f
}

func (c *compiler) get(p *concourse.Plan, e cond, sc scope) *handle {
	g := p.Get
	img, before, ok := c.resourceImage(p, g.Name, g.Type, g.TypeImage, e, sc)
	if !ok {
		return stub(p.ID, runspec.KindLeaf, g.Name, e)
	}
	spec := c.spec(runspec.ModeGet, p.ID, g.Name, sc.withTimeout(p.ID, g.Timeout))
	spec.Get = &runspec.Get{Type: g.Type, Resource: g.Resource, Source: g.Source, Params: g.Params}
	spec.MirroredImage, spec.PulledImage = c.mirroredTypeImage(g.TypeImage), pulledImage(g.TypeImage)
	if g.Version != nil {
		spec.Get.Version = *g.Version
	}
	if g.VersionFrom != nil {
		spec.Get.VersionFrom = string(*g.VersionFrom)
	}
	variant := taskVariant{privileged: g.TypeImage.Privileged}
	if img == "" {
		h := c.unavailable(spec, g.Type, g.TypeImage, g.Tags, e)
		c.producedBy(g.Name, g.Type, h.leaf, g.Source)
		return h
	}
	if g.Version == nil && g.VersionFrom == nil {
		// No version given: the runner checks for the latest first, in the get's own
		// container, so that the job runs standalone.
		spec.Get.Latest = true
	}
	h := c.leaf(spec, img, variant, g.Tags, c.after(before, e))
	c.producedBy(g.Name, g.Type, h.leaf, g.Source)
	return c.prepared(string(p.ID)+"/image", before, h)
}

// prepared is the handle of step with the steps that run before it (fetching or
// publishing its image, reading its config, finding its version): a do of them all, each
// entered once the one before it succeeded, that succeeds when step does.
func (c *compiler) prepared(id string, before []*handle, step *handle) *handle {
	if len(before) == 0 {
		return step
	}
	steps := make([]runspec.Node, 0, len(before)+1)
	var tasks []string
	for _, h := range append(before, step) {
		steps = append(steps, h.tree)
		tasks = append(tasks, h.tasks...)
	}
	s := c.test(step, onlySuccess)
	return &handle{
		tree:     runspec.Node{ID: id, Kind: runspec.KindDo, Steps: steps},
		name:     step.name,
		entry:    before[0].entry,
		tasks:    tasks,
		success:  &s,
		step:     step.step,
		failedBy: func() []cond { return c.seqFailed(append(append([]*handle{}, before...), step)) },
	}
}

// producedBy records that a get named name, of resource type typ, registers an artifact:
// a registry image's fetch names its image, which a task runs as it is; any other
// artifact a task runs is published first.
func (c *compiler) producedBy(name, typ, task string, source concourse.Source) {
	if runspec.RegistryImageType(typ) {
		c.images[name] = "$(tasks." + task + ".results.image)"
		c.notePull(c.images[name], source)
		return
	}
	if mirror, _ := source["mirror_self"].(bool); typ == "mock" && mirror {
		// Concourse's test resource fetches itself: its artifact is its own image, whose
		// metadata.json the task's runner reads (task).
		if img, ok := c.opts.ResourceImages["mock"]; ok {
			c.images[name] = img
			return
		}
	}
	delete(c.images, name)
}

func (c *compiler) check(p *concourse.Plan, e cond, sc scope) *handle {
	ck := p.Check
	img, before, ok := c.resourceImage(p, ck.Name, ck.Type, ck.TypeImage, e, sc)
	if !ok {
		return stub(p.ID, runspec.KindLeaf, ck.Name, e)
	}
	spec := c.spec(runspec.ModeCheck, p.ID, ck.Name, sc)
	spec.Check = &runspec.Check{Type: ck.Type, Resource: ck.Resource, Source: ck.Source, FromVersion: ck.FromVersion}
	if img == "" {
		return c.unavailable(spec, ck.Type, ck.TypeImage, ck.Tags, e)
	}
	spec.MirroredImage, spec.PulledImage = c.mirroredTypeImage(ck.TypeImage), pulledImage(ck.TypeImage)
	check := c.leaf(spec, img, taskVariant{privileged: ck.TypeImage.Privileged}, ck.Tags, c.after(before, e))
	return c.prepared(string(p.ID)+"/image", before, check)
}

func (c *compiler) put(p *concourse.Plan, e cond, sc scope) *handle {
	pp := p.Put
	img, before, ok := c.resourceImage(p, pp.Name, pp.Type, pp.TypeImage, e, sc)
	if !ok {
		return stub(p.ID, runspec.KindLeaf, pp.Name, e)
	}
	spec := c.spec(runspec.ModePut, p.ID, pp.Name, sc.withTimeout(p.ID, pp.Timeout))
	// Omitted, a put's inputs are detected from its params since Concourse v8
	// (exec.PutStep: "Put step defaults to detect inputs if not specified"): the runner
	// mounts the artifacts concourse.DetectPutInputs names that the build has.
	spec.Put = &runspec.Put{Type: pp.Type, Resource: pp.Resource, Source: pp.Source, Params: pp.Params,
		Inputs: runspec.InputsDetect, ExposeBuildCreatedBy: pp.ExposeBuildCreatedBy}
	spec.MirroredImage, spec.PulledImage = c.mirroredTypeImage(pp.TypeImage), pulledImage(pp.TypeImage)
	if in := pp.Inputs; in != nil {
		switch {
		case in.Detect:
		case in.All:
			spec.Put.Inputs = runspec.InputsAll
		default:
			spec.Put.Inputs, spec.Put.InputNames = runspec.InputsList, in.Specified
		}
	}
	if img == "" {
		return c.unavailable(spec, pp.Type, pp.TypeImage, pp.Tags, e)
	}
	put := c.leaf(spec, img, taskVariant{privileged: pp.TypeImage.Privileged}, pp.Tags, c.after(before, e))
	return c.prepared(string(p.ID)+"/image", before, put)
}

func (c *compiler) task(p *concourse.Plan, e cond, sc scope) *handle {
	t := p.Task
	defer c.taskOutputs(t, t.Config)
	spec := c.spec(runspec.ModeTask, p.ID, t.Name, sc.withTimeout(p.ID, t.Timeout))
	spec.Task = &runspec.Task{Vars: t.Vars, InputMapping: t.InputMapping, OutputMapping: t.OutputMapping, Privileged: t.Privileged}
	if c.opts.TaskCaches != nil && !c.opts.OneOff {
		spec.Task.CacheRecords = &runspec.CacheRecords{IDs: c.opts.TaskCaches[t.Name]}
	}
	if len(t.Params) > 0 {
		spec.Task.Params = map[string]any{}
		for k, v := range t.Params {
			spec.Task.Params[k] = v
		}
	}
	variant := taskVariant{privileged: t.Privileged}
	cfg := t.Config
	if cfg == nil {
		if static, ok := c.opts.TaskFiles[t.ConfigPath]; ok {
			cfg = &static
		}
	}
	if cfg != nil {
		raw, err := toJSONValue(cfg)
		if err != nil {
			c.fail(p, t.Name, "encoding its config: %v", err)
		}
		spec.Task.Config = raw
		variant.limits, variant.asRoot = mergeLimits(cfg.Limits, t.Limits), cfg.Run.User != ""
		if uid := runAsUser(cfg.Run.User); uid != 0 && !variant.privileged {
			variant.asRoot, variant.runAs = false, uid
		}
	}
	// Ahead of the task: the publishing of the artifact it runs, the reading of its config.
	var before []*handle
	image := ""
	if name := t.ImageArtifactName; name != "" {
		spec.Task.ImageArtifact = true
		if ref, ok := c.images[name]; ok {
			image = ref
			if ref == c.opts.ResourceImages["mock"] {
				// The mock resource's fetch of itself (producedBy): the other images
				// here are results of registry images' gets.
				spec.MirroredImage = &runspec.MirroredImage{Artifact: name}
			}
		} else {
			pub := c.publish(p, name, e, sc)
			before, image = append(before, pub), "$(tasks."+pub.leaf+".results.image)"
		}
	}
	if cfg == nil || image == "" && imageNeedsVars(cfg) {
		resolveSpec := c.spec(runspec.ModeResolve, p.ID+"/resolve", t.Name, sc)
		resolveSpec.Resolve = &runspec.Resolve{TaskPlanID: string(p.ID), File: t.ConfigPath, Config: spec.Task.Config, Vars: t.Vars, MockImage: c.opts.ResourceImages["mock"], DefaultImage: c.opts.DefaultTaskImage, ImageArtifact: image != ""}
		if cfg == nil {
			spec.Task.File = t.ConfigPath
			variant.limits = mergeLimits(nil, t.Limits)
			variant.asRoot = true // the user comes from the file; the runner drops to it
		}
		// With supplied credentials, the resolve step lists the vars of the file that the
		// build's starter did not know of, and the task's pod waits for their Secret.
		fileVars := cfg == nil && c.opts.SuppliedCredentials
		resolve := c.leaf(resolveSpec, c.opts.RunnerImage, taskVariant{varsResult: fileVars}, nil, c.after(before, e))
		if fileVars {
			variant.taskVars = runspec.TaskVarsSecret("$(context.pipelineRun.name)", resolve.leaf)
		}
		before = append(before, resolve)
		if image == "" {
			image = "$(tasks." + resolve.leaf + ".results.image)"
			if fileVars {
				c.runtimePulls[image] = true
			}
		}
	}
	if image == "" {
		img, fetch, mirrored, ok := c.taskImage(p, t.Name, cfg, c.after(before, e), sc)
		if !ok {
			return stub(p.ID, runspec.KindLeaf, t.Name, e)
		}
		before, image, spec.MirroredImage = append(before, fetch...), img, mirrored
	}
	if cfg != nil && cfg.ImageResource != nil && !spec.Task.ImageArtifact && runspec.RegistryImageType(cfg.ImageResource.Type) {
		ir := cfg.ImageResource
		// The node pulls it: the task's events show its fetch as Concourse plans it.
		pulled, err := PulledTaskImage(p.ID, *ir, t.ResourceTypes, t.Tags, t.CheckSkipInterval)
		if err != nil {
			c.fail(p, t.Name, "planning the fetch of its image: %v", err)
			return stub(p.ID, runspec.KindLeaf, t.Name, e)
		}
		spec.PulledImage = pulled
	}
	task := c.leaf(spec, image, variant, t.Tags, c.after(before, e))
	id := string(p.ID) + "/image"
	for _, h := range before {
		if h.tree.ID == string(p.ID)+"/resolve" {
			id = string(p.ID) + "/resolved"
		}
	}
	return c.prepared(id, before, task)
}

// after is the entry of a step that runs once the steps before it succeeded: e when there
// are none.
func (c *compiler) after(before []*handle, e cond) cond {
	if len(before) == 0 {
		return e
	}
	return c.test(before[len(before)-1], onlySuccess)
}

// publish is the step that pushes the artifact name, which task p runs as its image, to
// the build's image registry: the image result names it by digest.
func (c *compiler) publish(p *concourse.Plan, name string, e cond, sc scope) *handle {
	spec := c.spec(runspec.ModePublish, p.ID+"/publish", name, sc)
	spec.Publish = &runspec.Publish{TaskPlanID: string(p.ID), Artifact: name}
	c.publishes++
	// As root: the image's files are its owners', whoever they are.
	return c.leaf(spec, c.opts.RunnerImage, taskVariant{asRoot: true, publish: true}, nil, e)
}

// taskOutputs records the artifacts a task registers: a task that runs one as its image
// has it published first. The outputs of a task whose config is read when the build runs
// are not known here: one named as a registry image's fetch before it would still be run
// as that image.
func (c *compiler) taskOutputs(t *concourse.TaskPlan, cfg *concourse.TaskConfig) {
	if cfg == nil {
		return
	}
	for _, o := range cfg.Outputs {
		name := o.Name
		if m, ok := t.OutputMapping[name]; ok {
			name = m
		}
		delete(c.images, name)
	}
}

// imageNeedsVars reports whether a config's image is only known once the build's vars are.
func imageNeedsVars(cfg *concourse.TaskConfig) bool {
	ir := cfg.ImageResource
	if ir == nil || (!runspec.RegistryImageType(ir.Type)) {
		return false
	}
	for _, k := range []string{"repository", "tag"} {
		if s, ok := ir.Source[k].(string); ok && strings.Contains(s, "((") {
			return true
		}
	}
	return strings.Contains(ir.Version["digest"], "((")
}

// taskImage is the image of a task whose config is known: its image_resource or its
// rootfs_uri, else the default task image. An image_resource of another type than registry-image is fetched when the
// build runs, as Concourse fetches it: the steps returned run first, entered with e.
// The mock resource fetching itself is the mock's own image, which the task's runner
// fetches first for its metadata (the runspec.MirroredImage returned).
func (c *compiler) taskImage(p *concourse.Plan, step string, cfg *concourse.TaskConfig, e cond, sc scope) (string, []*handle, *runspec.MirroredImage, bool) {
	if ir := cfg.ImageResource; ir != nil && typeRunsMock(ir.Type, p.Task.ResourceTypes, 0) {
		// Concourse's test resource (or a custom type whose image it is, through
		// mirror_self): with mirror_self its image is its own.
		if mirror, _ := ir.Source["mirror_self"].(bool); mirror {
			if img, ok := c.opts.ResourceImages["mock"]; ok {
				get, _ := planner.FetchImagePlan(p.ID, *ir, p.Task.ResourceTypes, p.Task.Tags, p.Task.CheckSkipInterval)
				fetches := append(c.mirrorChain(get.Get.TypeImage), imageFetch(get.Get))
				return img, nil, &runspec.MirroredImage{Fetches: fetches}, true
			}
		}
	}
	if ir := cfg.ImageResource; ir != nil {
		img, reason := c.registryImage(ir.Type, ir.Source, ir.Version)
		switch {
		case reason == "":
			return img, nil, nil, true
		case runspec.RegistryImageType(ir.Type):
			c.fail(p, step, "its image_resource cannot be run here: %s", reason)
			return "", nil, nil, false
		}
		get, check := planner.FetchImagePlan(p.ID, *ir, p.Task.ResourceTypes, p.Task.Tags, p.Task.CheckSkipInterval)
		// Concourse announces the check and the get of a task's image (a custom type's,
		// not) with an event each on the task's origin that carries its plan, before
		// either runs: the first step of the fetch does.
		first, plans := get.ID, []*concourse.Plan{&get}
		if check != nil {
			first, plans = check.ID, []*concourse.Plan{check, &get}
		}
		for _, fp := range plans {
			pub, err := event.Public(*fp)
			if err != nil {
				c.fail(p, step, "%v", err)
				return "", nil, nil, false
			}
			if c.imagePlans == nil {
				c.imagePlans = map[concourse.PlanID][]json.RawMessage{}
			}
			c.imagePlans[first] = append(c.imagePlans[first], pub)
		}
		img, before, ok := c.fetchImage(p, check, &get, e, sc)
		return img, before, nil, ok
	}
	if cfg.RootfsURI != "" {
		if img, ok := imageFromRootfsURI(cfg.RootfsURI); ok {
			return img, nil, nil, true
		}
		c.fail(p, step, "rootfs_uri %q is not a docker:/// image", cfg.RootfsURI)
		return "", nil, nil, false
	}
	if img := c.opts.DefaultTaskImage; img != "" {
		// Concourse's worker runs it in its default root file system.
		return img, nil, nil, true
	}
	c.fail(p, step, "the task has no image: give its config an image_resource or a rootfs_uri, the step an image, or the build a default task image (--default-task-image; the web node's --tekton-default-task-image)")
	return "", nil, nil, false
}

func mergeLimits(cfg, step *concourse.ContainerLimits) concourse.ContainerLimits {
	var out concourse.ContainerLimits
	if cfg != nil {
		out = *cfg
	}
	if step != nil {
		if step.CPU != nil {
			out.CPU = step.CPU
		}
		if step.Memory != nil {
			out.Memory = step.Memory
		}
	}
	return out
}

func toJSONValue(v any) (any, error) {
	buf, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(buf, &out)
	return out, err
}
